package ghdouble

import (
	"net"
	"net/http"
	"strings"
)

// LoopbackHost reports whether a request's Host names this machine:
// localhost, a name under .localhost, or a loopback address.
func LoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackOnly refuses a request whose Host is not this machine's, 421 as
// a server does a name it does not serve. A double of Start acts for
// whoever reaches it (its authorize page signs in any login, its API and
// git answer every token it gave): a site whose name an attacker rebinds
// to 127.0.0.1 would otherwise reach it from a person's browser.
func loopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !LoopbackHost(r.Host) {
			http.Error(w, "the GitHub double answers only on 127.0.0.1, [::1] or localhost", http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}
