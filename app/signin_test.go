package app

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// TestSignInKeepsOffTheAppsCacheAndGauges: the dashboard's sign-in and
// its refresh ask GitHub as the person through Forge's one client
// construction (a 5xx is retried as for any client), but take no key space
// and no byte of the App's shared response cache, and leave the App's rate
// gauges alone: a person's own limit is not the App's (installation 0). An
// installation's client, beside them, takes both.
func TestSignInKeepsOffTheAppsCacheAndGauges(t *testing.T) {
	gh := ghdouble.New(t)
	inst := gh.AddInstallation("octo")
	hello := gh.AddRepo(inst, "octo/hello")
	gh.SetPermission("octo/hello", "alice", "write")
	want := []store.DashboardRepo{{ID: hello.ID, Name: "octo/hello"}}
	cfg := doubleConfig(gh)
	a := &App{cfg: cfg, log: zerolog.Nop(), metrics: NewMetrics()}
	cc, err := NewClientCreator(cfg, a.metrics, NewRedactor(cfg, os.LookupEnv, zerolog.Nop()))
	if err != nil {
		t.Fatal(err)
	}
	a.github.Store(&githubState{cfg: cfg, clients: cc})
	cache := a.metrics.responses
	spaces, bytes := cache.clients, cache.Bytes()
	gauges := func() []string {
		var out []string
		families, err := a.metrics.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if strings.HasPrefix(f.GetName(), "forge_github_rate_") && f.GetName() != "forge_github_rate_limit_pauses_total" {
				for _, m := range f.GetMetric() {
					out = append(out, f.GetName()+"{"+m.GetLabel()[0].GetValue()+"}")
				}
			}
		}
		return out
	}

	ctx := context.Background()
	s := &signIn{app: a, now: time.Now}
	token := gh.UserToken("alice")
	login, repos, err := s.whoAndWhat(ctx, token, true)
	if err != nil || login != "alice" || !slices.Equal(repos, want) {
		t.Fatalf("sign-in: %q %v %v", login, repos, err)
	}
	gh.FailNext("GET /user/installations", 1, ghdouble.ServerError(502))
	if _, repos, err := s.whoAndWhat(ctx, token, false); err != nil || !slices.Equal(repos, want) {
		t.Fatalf("the refresh, its first list answered 502: %v %v", repos, err)
	}
	if n := gh.Calls("GET /user/installations"); n != 3 {
		t.Errorf("GET /user/installations asked %d times, want the sign-in's, the refused one and its retry", n)
	}
	if cache.clients != spaces || cache.Bytes() != bytes {
		t.Errorf("the person's calls took %d key spaces and %d bytes of the App's response cache", cache.clients-spaces, cache.Bytes()-bytes)
	}
	if got := gauges(); len(got) != 0 {
		t.Errorf("the person's calls set the App's rate gauges: %v", got)
	}

	c, err := cc.NewInstallationClient(inst)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Repositories.Get(ctx, "octo", "hello"); err != nil {
		t.Fatal(err)
	}
	if cache.clients != spaces+1 || cache.Bytes() == bytes {
		t.Errorf("an installation's client did not use the response cache")
	}
	if got := gauges(); !slices.Contains(got, "forge_github_rate_remaining{"+strconv.FormatInt(inst, 10)+"}") {
		t.Errorf("an installation's call did not set its rate gauge: %v", got)
	}
}
