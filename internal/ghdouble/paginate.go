package ghdouble

import (
	"fmt"
	"strconv"
	"strings"
)

const (
	defaultPerPage = 30
	maxPerPage     = 100
)

// paginate returns the page of items the request asks for (page, per_page:
// default 30, at most 100) and sets GitHub's Link header, which go-github follows.
func paginate[T any](c *Call, items []T) []T {
	perPage := queryInt(c, "per_page", defaultPerPage)
	perPage = min(max(perPage, 1), maxPerPage)
	page := max(queryInt(c, "page", 1), 1)
	last := max((len(items)+perPage-1)/perPage, 1)

	var links []string
	link := func(p int, rel string) {
		q := c.Request.URL.Query()
		q.Set("page", strconv.Itoa(p))
		links = append(links, fmt.Sprintf(`<http://%s%s?%s>; rel="%s"`, c.Request.Host, c.Request.URL.Path, q.Encode(), rel))
	}
	if page > 1 {
		link(page-1, "prev")
	}
	if page < last {
		link(page+1, "next")
		link(last, "last")
	}
	if page > 1 {
		link(1, "first")
	}
	if len(links) > 0 {
		c.Header().Set("Link", strings.Join(links, ", "))
	}
	start := (page - 1) * perPage
	if start >= len(items) {
		return []T{}
	}
	return items[start:min(start+perPage, len(items))]
}

func queryInt(c *Call, name string, def int) int {
	n, err := strconv.Atoi(c.Query(name))
	if err != nil {
		return def
	}
	return n
}
