package main

import (
	"fmt"
	"net/http"
	"strings"
)

// Greeting is the answer to name; an empty name is greeted as "world".
func Greeting(name string) string {
	name = strings.TrimSpace(name)
	if name == "" {
		name = "world"
	}
	return fmt.Sprintf("Hello, %s!", name)
}

// hello answers GET /hello?name=NAME.
func hello(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, Greeting(r.URL.Query().Get("name")))
}
