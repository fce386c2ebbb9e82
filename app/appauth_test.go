package app

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/internal/ghdouble"
	"github.com/forge-dev/forge/pipeline"
)

const tokenEndpoint = "POST /app/installations/{installation_id}/access_tokens"

// TestTokenRefusals: what GitHub answers at the installation-token endpoint
// becomes the pipeline's error, through the real clients (REST, GraphQL and
// git tokens alike) against the double. Only a deleted or suspended installation
// is gone; a refused JWT (clock, key, App id) is the App's, named with its
// likely cause; a rate limit or a 5xx passes.
func TestTokenRefusals(t *testing.T) {
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	otherPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(otherKey)}))
	tests := []struct {
		name        string
		skew        time.Duration // the double's clock minus Forge's
		setup       func(gh *ghdouble.Server, inst int64, c *Config)
		want        error
		wantProblem string // a regular expression; "" when the App is not refused
	}{
		{"installation deleted", 0, func(gh *ghdouble.Server, inst int64, c *Config) { gh.DeleteInstallation(inst) },
			pipeline.ErrInstallationGone, ""},
		{"installation suspended", 0, func(gh *ghdouble.Server, inst int64, c *Config) { gh.SuspendInstallation(inst) },
			pipeline.ErrInstallationGone, ""},
		{"GitHub's clock 5 minutes ahead", 5 * time.Minute, nil,
			pipeline.ErrAppRefused, `clock off by (299|300|301)s: this server's clock is behind GitHub's`},
		{"GitHub's clock 5 minutes behind", -5 * time.Minute, nil,
			pipeline.ErrAppRefused, `clock off by (299|300|301)s: this server's clock is ahead of GitHub's`},
		{"another key", 0, func(gh *ghdouble.Server, inst int64, c *Config) { c.Github.App.PrivateKey = otherPEM },
			pipeline.ErrAppRefused, "the private key or App id does not match the App"},
		{"an App id GitHub does not know", 0, func(gh *ghdouble.Server, inst int64, c *Config) { c.Github.App.IntegrationID++ },
			pipeline.ErrAppRefused, "GitHub knows no App with this server's App id"},
		{"secondary rate limit", 0, func(gh *ghdouble.Server, inst int64, c *Config) {
			gh.FailNext(tokenEndpoint, 1, ghdouble.SecondaryRateLimit(0))
		}, pipeline.ErrTransient, ""},
		{"GitHub fails", 0, func(gh *ghdouble.Server, inst int64, c *Config) {
			gh.FailNext(tokenEndpoint, 1, ghdouble.ServerError(http.StatusBadGateway))
		}, pipeline.ErrTransient, ""},
	}
	for _, tt := range tests {
		for _, via := range []string{"api", "graphql", "git token"} {
			t.Run(tt.name+"/"+via, func(t *testing.T) {
				gh := ghdouble.New(t, ghdouble.WithClock(func() time.Time { return time.Now().Add(tt.skew) }))
				inst := gh.AddInstallation("octo")
				gh.AddRepo(inst, "octo/hello")
				gh.AddIssue("octo/hello", ghdouble.IssueSpec{Title: "t", Author: "alice"})
				cfg := doubleConfig(gh)
				if tt.setup != nil {
					tt.setup(gh, inst, &cfg)
				}
				reg := prometheus.NewRegistry()
				auth := newAppAuth(zerolog.Nop(), reg)
				err := tokenError(t, cfg, auth, inst, via)
				if !errors.Is(err, tt.want) {
					t.Fatalf("error = %v, want %v", err, tt.want)
				}
				for _, other := range []error{pipeline.ErrInstallationGone, pipeline.ErrAppRefused, pipeline.ErrTransient} {
					if other != tt.want && errors.Is(err, other) {
						t.Errorf("error %v is also %v", err, other)
					}
				}
				problem := auth.Problem()
				if tt.wantProblem == "" && problem != "" || !regexp.MustCompile(tt.wantProblem).MatchString(problem) {
					t.Errorf("problem = %q, want %q", problem, tt.wantProblem)
				}
				wantOK := 1.0
				if tt.wantProblem != "" {
					wantOK = 0
				}
				if got := gaugeValue(auth.ok); got != wantOK {
					t.Errorf("forge_github_app_auth_ok = %v, want %v", got, wantOK)
				}
			})
		}
	}
}

// TestAppRefusalClears: the next token GitHub issues clears the problem.
func TestAppRefusalClears(t *testing.T) {
	var skew atomic.Int64
	skew.Store(int64(5 * time.Minute))
	gh := ghdouble.New(t, ghdouble.WithClock(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }))
	inst := gh.AddInstallation("octo")
	gh.AddRepo(inst, "octo/hello")
	gh.AddIssue("octo/hello", ghdouble.IssueSpec{Title: "t", Author: "alice"})
	auth := newAppAuth(zerolog.Nop(), prometheus.NewRegistry())
	if err := tokenError(t, doubleConfig(gh), auth, inst, "api"); !errors.Is(err, pipeline.ErrAppRefused) {
		t.Fatalf("error = %v, want the App refused", err)
	}
	if off := gaugeValue(auth.offset); off > -299 || off < -301 {
		t.Errorf("forge_github_clock_offset_seconds = %v, want about -300", off)
	}
	skew.Store(0)
	if err := tokenError(t, doubleConfig(gh), auth, inst, "api"); err != nil {
		t.Fatalf("after the clock is right: %v", err)
	}
	if p := auth.Problem(); p != "" || gaugeValue(auth.ok) != 1 {
		t.Errorf("after a token: problem %q, ok %v", p, gaugeValue(auth.ok))
	}
	if off := gaugeValue(auth.offset); off > 1 || off < -1 {
		t.Errorf("forge_github_clock_offset_seconds = %v, want about 0", off)
	}
}

func gaugeValue(g prometheus.Gauge) float64 {
	var m dto.Metric
	_ = g.Write(&m)
	return m.GetGauge().GetValue()
}

func doubleConfig(gh *ghdouble.Server) Config {
	var c Config
	c.Github.WebURL, c.Github.V3APIURL, c.Github.V4APIURL = gh.WebURL(), gh.URL(), gh.GraphQLURL()
	c.Github.App.IntegrationID = gh.AppID()
	c.Github.App.PrivateKey = string(gh.PrivateKeyPEM())
	c.Github.App.WebhookSecret = gh.WebhookSecret()
	return c
}

// tokenError is the pipeline's error for a first request of installation
// inst, which needs a token: a REST or GraphQL call (which fails here even
// when served: no such comment), or a git token as the workspace asks for one.
func tokenError(t *testing.T, cfg Config, auth *appAuth, inst int64, via string) error {
	t.Helper()
	ctx := context.Background()
	repo := pipeline.Repo{Owner: "octo", Name: "hello"}
	base := auth.Transport(http.DefaultTransport)
	if via == "git token" {
		ts := &tokenSource{appID: cfg.Github.App.IntegrationID, key: []byte(cfg.Github.App.PrivateKey), apiURL: cfg.Github.V3APIURL, base: base}
		if _, err := ts.token(ctx, inst, repo); err != nil {
			return apiError(fmt.Errorf("installation token: %w", err))
		}
		return nil
	}
	cc, err := NewClientCreator(cfg, NewMetrics(), NewRedactor(cfg, os.LookupEnv, zerolog.Nop()), githubapp.WithTransport(base))
	if err != nil {
		t.Fatal(err)
	}
	if via == "graphql" {
		v4, err := cc.NewInstallationV4Client(inst)
		if err != nil {
			t.Fatal(err)
		}
		return (&githubAPI{v4: v4}).MinimizeComment(ctx, "IC_unknown")
	}
	c, err := cc.NewInstallationClient(inst)
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&githubAPI{c: c, trees: &treeCache{}}).ListComments(ctx, repo, 1)
	return err
}
