// Command greeter answers GET /hello with a greeting, at most -rate
// requests per second per client, in bursts of up to -burst.
package main

import (
	"flag"
	"log"
	"net"
	"net/http"

	"github.com/acme/greeter/ratelimit"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	rate := flag.Float64("rate", 5, "requests per second each client may make")
	burst := flag.Int("burst", 10, "requests a client may make at once")
	flag.Parse()

	mux := http.NewServeMux()
	mux.Handle("GET /hello", limited(ratelimit.New(*rate, *burst), http.HandlerFunc(hello)))
	log.Printf("greeter listening on %s (%g requests per second per client, bursts of %d)", *addr, *rate, *burst)
	log.Fatal(http.ListenAndServe(*addr, mux))
}

// limited answers 429 Too Many Requests to a client over its limit. A
// client is its host: every connection of one client shares its bucket.
func limited(l *ratelimit.Limiter, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		if !l.Allow(host) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests: try again in a second.", http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}
