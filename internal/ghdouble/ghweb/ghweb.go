// Package ghweb serves pages like GitHub's over the GitHub double's state,
// for a person to use: a repository's files, its issues and pull requests
// with their comments, reviews and inline comments, commits and check runs
// with their buttons. What the person does (open an issue, comment, review,
// press a check run's button, merge) goes through ghdouble.Person, so the
// App receives GitHub's webhook for it. The pages ask for themselves again
// every second and show what changed without a reload.
//
// Everything shown comes from the double; every text in it may be hostile
// and is escaped (Markdown without raw HTML, see markdown.go).
package ghweb

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/forge-dev/forge/internal/ghdouble"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure the pages.
type Options struct {
	// Login is the person signed in, who does what the pages do.
	Login string
	// Banner is Markdown shown at the top of every repository page, e.g.
	// a demo's instructions.
	Banner string
}

// site is the pages of one double.
type site struct {
	gh     *ghdouble.Server
	person *ghdouble.Person
	banner template.HTML
	// csrf is in every form and checked on every action: another site the
	// person visits cannot act in their name.
	csrf  string
	pages map[string]*template.Template
}

// Mount serves the pages on the double's web side, at GitHub's paths
// (/{owner}/{repo}/issues/{number}, /{owner}/{repo}/pull/{number}, …), so
// the links an App writes (html_url) open them.
func Mount(gh *ghdouble.Server, o Options) error {
	if o.Login == "" {
		return fmt.Errorf("ghweb: a person must be signed in (Options.Login)")
	}
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return err
	}
	s := &site{gh: gh, person: gh.As(o.Login), csrf: hex.EncodeToString(token), pages: map[string]*template.Template{}}
	if o.Banner != "" {
		s.banner = markdown("", o.Banner)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return err
	}
	for _, name := range names {
		page := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		if page == "layout" {
			continue
		}
		t, err := template.New(page).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", name)
		if err != nil {
			return fmt.Errorf("ghweb: %w", err)
		}
		s.pages[page] = t
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return err
	}
	routes := []struct {
		pattern string
		h       http.HandlerFunc
	}{
		{"GET /{$}", s.home},
		{"GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }},
		{"GET /{owner}/{repo}", s.repoHome},
		{"GET /{owner}/{repo}/tree/{rest...}", s.tree},
		{"GET /{owner}/{repo}/blob/{rest...}", s.blob},
		{"GET /{owner}/{repo}/commits/{rest...}", s.commits},
		{"GET /{owner}/{repo}/commit/{sha}", s.commit},
		{"GET /{owner}/{repo}/issues", s.issues},
		{"GET /{owner}/{repo}/issues/new", s.newIssue},
		{"POST /{owner}/{repo}/issues", s.openIssue},
		{"GET /{owner}/{repo}/issues/{number}", s.issue},
		{"POST /{owner}/{repo}/issues/{number}/comments", s.comment},
		{"GET /{owner}/{repo}/pulls", s.pulls},
		{"GET /{owner}/{repo}/pull/{number}", s.pull},
		{"GET /{owner}/{repo}/pull/{number}/commits", s.pullCommits},
		{"GET /{owner}/{repo}/pull/{number}/checks", s.pullChecks},
		{"GET /{owner}/{repo}/pull/{number}/files", s.pullFiles},
		{"POST /{owner}/{repo}/pull/{number}/reviews", s.review},
		{"POST /{owner}/{repo}/pull/{number}/merge", s.merge},
		{"GET /{owner}/{repo}/runs/{id}", s.run},
		{"POST /{owner}/{repo}/runs/{id}/actions", s.press},
	}
	for _, rt := range routes {
		gh.HandleWeb(rt.pattern, secured(rt.h))
	}
	gh.HandleWeb("GET /_ghweb/{file}", secured(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, r.PathValue("file"))
	}))
	return nil
}

// secured sets the headers every page carries: no script but the pages'
// own file, no framing, no sniffing. A page answers only a request to a
// loopback name: the pages act as the signed-in person for whoever
// reaches them, and a site whose name an attacker rebinds to 127.0.0.1
// would otherwise read them, form token and all, from the person's
// browser.
func secured(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ghdouble.LoopbackHost(r.Host) {
			http.Error(w, "the playground's pages answer only on 127.0.0.1, [::1] or localhost", http.StatusMisdirectedRequest)
			return
		}
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		h(w, r)
	})
}

// layout is what every page shows around its content.
type layout struct {
	Title  string
	Login  string
	CSRF   string
	Banner template.HTML
	Error  string
	Repo   *repoHeader
	Tab    string // code, issues, pulls
	// Path is the page's own path, where an action returns to.
	Path string
}

type repoHeader struct {
	FullName, Owner, Name, Description string
	OpenIssues, OpenPulls              int
}

func (s *site) layout(r *http.Request, title string, repo *ghdouble.Repo, tab string) layout {
	l := layout{Title: title, Login: s.person.Login(), CSRF: s.csrf, Error: r.URL.Query().Get("error"), Tab: tab, Path: r.URL.Path}
	if repo != nil {
		l.Banner = s.banner
		h := &repoHeader{FullName: repo.FullName, Owner: repo.Owner, Name: repo.Name, Description: repo.Description}
		for _, is := range s.gh.Issues(repo.FullName) {
			switch {
			case is.State != "open":
			case is.IsPull:
				h.OpenPulls++
			default:
				h.OpenIssues++
			}
		}
		l.Repo = h
	}
	return l
}

// render writes a page, or 304 when the page asking for itself again (the
// pages' polling) has not changed.
func (s *site) render(w http.ResponseWriter, r *http.Request, page string, data any) {
	var b bytes.Buffer
	if err := s.pages[page].ExecuteTemplate(&b, "layout", data); err != nil {
		http.Error(w, "render "+page+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(b.Bytes())
	etag := `"` + hex.EncodeToString(sum[:12]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "no-cache")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

func (s *site) notFound(w http.ResponseWriter, r *http.Request, what string) {
	w.WriteHeader(http.StatusNotFound)
	s.render(w, r, "notfound", struct {
		layout
		What string
	}{s.layout(r, "Not found", nil, ""), what})
}

// repo is the route's repository, or nil after answering 404.
func (s *site) repo(w http.ResponseWriter, r *http.Request) *ghdouble.Repo {
	name := r.PathValue("owner") + "/" + r.PathValue("repo")
	rp := s.gh.Repo(name)
	if rp == nil {
		s.notFound(w, r, "repository "+name)
	}
	return rp
}

// number is the route's {number}, 0 if it is none.
func number(r *http.Request) int {
	n, err := strconv.Atoi(r.PathValue("number"))
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// action checks a form post is the site's own, then runs do; an error
// returns to back with GitHub's refusal shown, success goes to the page do
// names.
func (s *site) action(w http.ResponseWriter, r *http.Request, back string, do func() (string, error)) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf)) != 1 || r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		http.Error(w, "This form did not come from these pages.", http.StatusForbidden)
		return
	}
	next, err := do()
	if err != nil {
		http.Redirect(w, r, back+"?error="+url.QueryEscape(err.Error()), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}
