package ghdouble

import "fmt"

// Layout is how the double lays out GitHub's REST API, GraphQL and web pages,
// as Forge meets them on GitHub Enterprise Server or on github.com.
type Layout int

const (
	// Enterprise is GitHub Enterprise Server's layout, on one host: the REST
	// API at /api/v3/, GraphQL at /api/graphql, the web pages at the root.
	Enterprise Layout = iota
	// DotCom is github.com's layout (and GitHub Enterprise Cloud's with data
	// residency), on two hosts: the REST API at the root of the API host
	// (api.github.com), GraphQL at /graphql there, the web pages (html_url,
	// the manifest flow, git over HTTP) on the other host (github.com).
	DotCom
)

// WithLayout selects the layout (default Enterprise).
func WithLayout(l Layout) Option { return func(o *options) { o.layout = l } }

// Layout is the layout the double serves.
func (s *Server) Layout() Layout { return s.layout }

func (l Layout) String() string {
	if l == DotCom {
		return "dotcom"
	}
	return "enterprise"
}

// ParseLayout reads a layout's name, "enterprise" or "dotcom".
func ParseLayout(name string) (Layout, error) {
	for _, l := range []Layout{Enterprise, DotCom} {
		if name == l.String() {
			return l, nil
		}
	}
	return 0, fmt.Errorf("unknown GitHub layout %q (want enterprise or dotcom)", name)
}

// apiPrefix is where the REST API lives on the API host: go-github's
// WithEnterpriseURLs and go-githubapp take a base URL ending in /api/v3/ for
// Enterprise Server, and api.github.com's root for github.com.
func (l Layout) apiPrefix() string {
	if l == DotCom {
		return ""
	}
	return "/api/v3"
}

// graphqlPath is where GraphQL lives on the API host.
func (l Layout) graphqlPath() string {
	if l == DotCom {
		return "/graphql"
	}
	return "/api/graphql"
}

// layoutHint says where the layout serves the APIs, for the report of a
// request nothing serves: often one sent where the other layout has it.
func (s *Server) layoutHint() string {
	return fmt.Sprintf(" (in the %s layout the REST API is at %s and GraphQL at %s)", s.layout, s.URL(), s.GraphQLURL())
}
