// Package ghdouble is a stateful fake of GitHub for Forge's tests: the REST API a
// GitHub App uses, and the few github.com pages it meets, served over real HTTP on
// 127.0.0.1 by New, which closes it when the test ends. Start runs the same double
// outside a test (`forge demo`): what would fail a test is logged instead.
//
// # Layout
//
// The double serves GitHub's two layouts; WithLayout picks one (default Enterprise).
// GitHub Enterprise Server's, one server for everything:
//
//	URL()        = http://127.0.0.1:PORT/api/v3/      the REST API (go-github BaseURL, github.v3_api_url)
//	GraphQLURL() = http://127.0.0.1:PORT/api/graphql  GraphQL (github.v4_api_url)
//	WebURL()     = http://127.0.0.1:PORT/             web pages: html_url links, /settings/apps/new, git over HTTP
//
// github.com's (DotCom), an API host and a web host, as api.github.com and github.com:
//
//	URL()        = http://127.0.0.1:PORT/             the REST API at the API host's root
//	GraphQLURL() = http://127.0.0.1:PORT/graphql      GraphQL on the API host
//	WebURL()     = http://127.0.0.1:OTHER/            the web pages, on a listener of their own
//
// Every URL the double writes into a payload (url, html_url, clone_url, ...)
// comes from apiBase and WebURL, so it follows the layout; a request sent
// where the other layout serves it is reported, with where this one does.
//
// # What every request goes through
//
//  1. Routing by GitHub's path templates; an unknown route fails the test and answers 404.
//  2. Validation against GitHub's OpenAPI description (testdata/openapi, trimmed to
//     the served operations): a violation fails the test (t.Errorf with method, path
//     and reason) and answers as GitHub would (422, 404 for a bad path parameter).
//  3. Authentication: the App's JWT on AuthApp routes, a user access token on
//     AuthUser routes (/user/...; see oauth.go for the web flow that issues
//     them), an installation token elsewhere (401 "Bad credentials" otherwise),
//     the route's Permission checked against the token's permissions (403), and
//     the token's repositories (404).
//  4. GitHub's primary rate limit (LimitRate) and its secondary limit on
//     content creation (LimitContentCreation), then a failure queued with
//     FailNext, if any.
//  5. The handler; its answer is checked against GitHub's response schema, and a
//     mismatch fails the test as a bug of the double.
//
// Every request is counted under its endpoint, "METHOD /template" (Calls).
//
// # Adding endpoints
//
// A group of endpoints lives in a file of its own (git.go, pulls.go, checks.go)
// with a method listing its routes:
//
//	func (s *Server) pullRoutes() []Route {
//		return []Route{
//			{Method: "GET", Path: "/repos/{owner}/{repo}/pulls/{pull_number}",
//				Permission: "pull_requests:read", Handler: s.getPull},
//		}
//	}
//
// Add the method to apiRoutes in routes.go (web pages: webRoutes), then run
//
//	go generate ./internal/ghdouble
//
// which reads ../shared/github/openapi/api.github.com.json and rewrites the
// trimmed description with exactly the operations of Endpoints() and the
// components they reference. New refuses a route whose operation is missing
// from it. Path parameters use the OpenAPI names; a last "{name...}" segment
// takes the rest of the path (git refs with slashes). Handlers return a status
// and a JSON-encodable body, or an *Error (see notFound, validationFailed).
//
// Per-repository state (issues, comments, labels; the git repository and pull
// requests next) sits in Repo under its mutex; see the locking note on Server.
package ghdouble

//go:generate go run ./internal/trimspec -in ../../../shared/github/openapi/api.github.com.json -out ../../testdata/openapi/api.github.com.json
