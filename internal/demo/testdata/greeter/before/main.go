// Command greeter answers GET /hello with a greeting.
package main

import (
	"flag"
	"log"
	"net/http"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	flag.Parse()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", hello)
	log.Printf("greeter listening on %s", *addr)
	log.Fatal(http.ListenAndServe(*addr, mux))
}
