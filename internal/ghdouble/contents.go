package ghdouble

import (
	"fmt"
	"net/http"
	"path"
	"strings"
)

func (s *Server) contentsRoutes() []Route {
	return []Route{
		{Method: "GET", Path: "/repos/{owner}/{repo}/contents/{path...}", Permission: "contents:read", Handler: s.getContents},
	}
}

// getContents answers a file (base64, with its blob SHA), a symlink, or a
// directory's listing, at ?ref= or the default branch.
func (s *Server) getContents(c *Call) (int, any) {
	s.reportRawMedia(c)
	r := c.Repo
	g := r.git
	p := strings.Trim(c.Param("path"), "/")
	ref := c.Query("ref")
	if ref == "" {
		ref = r.DefaultBranch
	}
	commit, ok, err := g.commitOf(ref)
	if err != nil {
		return s.gitFailure(c, err)
	}
	if !ok {
		return http.StatusNotFound, &Error{Message: fmt.Sprintf("No commit found for the ref %s", ref)}
	}
	entries, err := g.lsTree(commit, false, p)
	if err != nil {
		return s.gitFailure(c, err)
	}
	if len(entries) != 1 || entries[0].Path != p {
		return notFound()
	}
	e := entries[0]
	switch e.Type {
	case "tree":
		children, err := g.lsTree(e.SHA, false)
		if err != nil {
			return s.gitFailure(c, err)
		}
		out := []any{}
		for _, child := range children {
			child.Path = p + "/" + child.Path
			out = append(out, s.contentEntryJSON(r, ref, child))
		}
		return http.StatusOK, out
	case "blob":
		data, err := g.readObject("blob", e.SHA)
		if err != nil {
			return s.gitFailure(c, err)
		}
		out := s.contentEntryJSON(r, ref, e)
		if e.Mode == "120000" {
			out["target"] = string(data)
			return http.StatusOK, out
		}
		out["content"] = wrapBase64(data)
		out["encoding"] = "base64"
		return http.StatusOK, out
	}
	return http.StatusOK, s.contentEntryJSON(r, ref, e)
}

// contentEntryJSON is the part every content answer shares: a directory
// listing's entry, or a file's answer before its content.
func (s *Server) contentEntryJSON(r *Repo, ref string, e treeEntry) map[string]any {
	api := s.repoAPIURL(r)
	escaped := escapePath(e.Path)
	self := fmt.Sprintf("%s/contents/%s?ref=%s", api, escaped, ref)
	typ := "file"
	git := api + "/git/blobs/" + e.SHA
	html := fmt.Sprintf("%s/blob/%s/%s", s.repoHTMLURL(r), ref, escaped)
	var download any = fmt.Sprintf("%sraw/%s/%s/%s", s.WebURL(), r.FullName, ref, escaped)
	size := e.Size
	switch {
	case e.Type == "tree":
		typ, git, download, size = "dir", api+"/git/trees/"+e.SHA, nil, 0
		html = fmt.Sprintf("%s/tree/%s/%s", s.repoHTMLURL(r), ref, escaped)
	case e.Type == "commit":
		typ, git, download, size = "submodule", api+"/git/trees/"+e.SHA, nil, 0
	case e.Mode == "120000":
		typ = "symlink"
	}
	return map[string]any{
		"type":         typ,
		"size":         size,
		"name":         path.Base(e.Path),
		"path":         e.Path,
		"sha":          e.SHA,
		"url":          self,
		"git_url":      git,
		"html_url":     html,
		"download_url": download,
		"_links":       map[string]any{"self": self, "git": git, "html": html},
	}
}
