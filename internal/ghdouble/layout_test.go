package ghdouble

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
)

// TestLayouts: in each layout the REST API, GraphQL and the web side are
// where GitHub puts them, every URL of a payload follows, and a request sent
// where the other layout serves it is reported and refused.
func TestLayouts(t *testing.T) {
	for _, tt := range []struct {
		layout             Layout
		api, graphql       string // paths on the API host
		wrongAPI, wrongGQL string // the other layout's paths
		webOnTheAPIHost    bool
	}{
		{layout: Enterprise, api: "/api/v3/", graphql: "/api/graphql", wrongAPI: "/repos/acme/widgets", wrongGQL: "/graphql", webOnTheAPIHost: true},
		{layout: DotCom, api: "/", graphql: "/graphql", wrongAPI: "/api/v3/repos/acme/widgets", wrongGQL: "/api/graphql"},
	} {
		t.Run(tt.layout.String(), func(t *testing.T) {
			t.Parallel()
			s, rec := newRecorded(t, WithLayout(tt.layout))
			if s.Layout() != tt.layout {
				t.Fatalf("Layout() = %s", s.Layout())
			}
			api, web := mustParse(t, s.URL()), mustParse(t, s.WebURL())
			if api.Path != tt.api || s.GraphQLURL() != api.Scheme+"://"+api.Host+tt.graphql || web.Path != "/" {
				t.Errorf("URL %s GraphQLURL %s WebURL %s", s.URL(), s.GraphQLURL(), s.WebURL())
			}
			if (api.Host == web.Host) != tt.webOnTheAPIHost {
				t.Errorf("API host %s, web host %s", api.Host, web.Host)
			}

			inst := s.AddInstallation("acme")
			s.AddRepo(inst, "acme/widgets").Seed(map[string]string{"README.md": "# widgets\n"}, "Initial commit")
			gh := client(t, s, inst)
			repo, _, err := gh.Repositories.Get(context.Background(), "acme", "widgets")
			if err != nil {
				t.Fatalf("get repository: %v", err)
			}
			for name, u := range map[string]string{"url": repo.GetURL(), "owner.url": repo.GetOwner().GetURL(), "hooks_url": repo.GetHooksURL()} {
				if !strings.HasPrefix(u, s.URL()) {
					t.Errorf("%s %s is not below the API %s", name, u, s.URL())
				}
			}
			for name, u := range map[string]string{"html_url": repo.GetHTMLURL(), "clone_url": repo.GetCloneURL(), "owner.html_url": repo.GetOwner().GetHTMLURL()} {
				if !strings.HasPrefix(u, s.WebURL()) {
					t.Errorf("%s %s is not on the web side %s", name, u, s.WebURL())
				}
			}
			if repo.GetCloneURL() != s.CloneURL("acme/widgets") || !strings.Contains(repo.GetSSHURL(), "@"+web.Host+":") {
				t.Errorf("clone_url %s ssh_url %s", repo.GetCloneURL(), repo.GetSSHURL())
			}
			tok := installationToken(t, s, inst)
			if _, _, err := clone(t, s, "acme/widgets", tokenAuth(tok)); err != nil {
				t.Errorf("clone from the clone_url: %v", err)
			}
			n := s.AddIssue("acme/widgets", IssueSpec{Title: "a title", Author: "alice"})
			cm, _, err := gh.Issues.CreateComment(context.Background(), "acme", "widgets", n, &github.IssueComment{Body: github.String("hello")})
			if err != nil || !strings.HasPrefix(cm.GetURL(), s.URL()) || !strings.HasPrefix(cm.GetIssueURL(), s.URL()) || !strings.HasPrefix(cm.GetUser().GetURL(), s.URL()) ||
				!strings.HasPrefix(cm.GetHTMLURL(), s.WebURL()) || !strings.HasPrefix(cm.GetUser().GetHTMLURL(), s.WebURL()) {
				t.Errorf("comment: %v url %s issue_url %s user.url %s html_url %s user.html_url %s", err, cm.GetURL(), cm.GetIssueURL(), cm.GetUser().GetURL(), cm.GetHTMLURL(), cm.GetUser().GetHTMLURL())
			}
			if a := graphql(t, s, "bearer "+tok, `mutation { minimizeComment(input: {subjectId: "nope", classifier: OUTDATED}) { clientMutationId } }`, nil); a.status != http.StatusOK || !strings.Contains(a.raw, "NOT_FOUND") {
				t.Errorf("GraphQL at %s: %d %s", s.GraphQLURL(), a.status, a.raw)
			}
			if n := s.GraphQLCalls("minimizeComment"); n != 1 {
				t.Errorf("GraphQLCalls(minimizeComment) = %d, want 1", n)
			}

			origin := api.Scheme + "://" + api.Host
			for _, target := range []string{origin + tt.wrongGQL, s.WebURL() + strings.TrimPrefix(tt.wrongGQL, "/"), origin + tt.wrongAPI} {
				if a := call(t, http.MethodPost, target, "bearer "+tok, map[string]any{"query": "mutation { x }"}); a.status != http.StatusNotFound {
					t.Errorf("POST %s: %d, want 404", target, a.status)
				}
				if got := rec.reported(); len(got) != 1 || !strings.Contains(got[0], "in the "+tt.layout.String()+" layout") {
					t.Errorf("POST %s: reports %q, want one naming the layout", target, got)
				}
			}
			if n := s.GraphQLCalls("minimizeComment"); n != 1 {
				t.Errorf("GraphQLCalls(minimizeComment) after misplaced requests = %d, want 1", n)
			}
		})
	}
}

// TestManifestFlowInTheDotComLayout: the App's web pages are on the web
// host, the manifest conversion on the API host.
func TestManifestFlowInTheDotComLayout(t *testing.T) {
	s, _ := newRecorded(t, WithLayout(DotCom))
	setup := newForgeSetup(t)
	resp := submit(t, s.WebURL()+"settings/apps/new", setup.manifest(), "st")
	code := setup.received().Get("code")
	if resp.StatusCode != http.StatusOK || code == "" {
		t.Fatalf("manifest form: %d, code %q", resp.StatusCode, code)
	}
	gh := github.NewClient(nil)
	gh.BaseURL = mustParse(t, s.URL())
	cfg, _, err := gh.Apps.CompleteAppManifest(context.Background(), code)
	if err != nil {
		t.Fatalf("convert the manifest at %s: %v", s.URL(), err)
	}
	if !strings.HasPrefix(cfg.GetHTMLURL(), s.WebURL()+"apps/") || !strings.HasPrefix(cfg.GetOwner().GetURL(), s.URL()) {
		t.Errorf("App html_url %s owner url %s", cfg.GetHTMLURL(), cfg.GetOwner().GetURL())
	}
}

func TestParseLayout(t *testing.T) {
	for _, l := range []Layout{Enterprise, DotCom} {
		if got, err := ParseLayout(l.String()); err != nil || got != l {
			t.Errorf("ParseLayout(%q) = %v, %v", l, got, err)
		}
	}
	if _, err := ParseLayout("github.com"); err == nil {
		t.Error("ParseLayout(github.com): no error")
	}
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
