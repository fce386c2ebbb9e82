package agents

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline/agent"
)

// TestSandboxNetworkAllow: an agent whose runtime says network: allow
// reaches its allowed host:port pairs through the sandbox's proxy (plain
// http:// by HTTP_PROXY, TLS by CONNECT for HTTPS_PROXY), and nothing else
// on loopback: not Forge's own port, not PostgreSQL's, not an allowed
// port by a name that resolves to loopback, and no socket of its own
// reaches the host. Each refusal is reported.
func TestSandboxNetworkAllow(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("curl is needed to act as the agent's HTTP client: %v", err)
	}
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "model via "+r.Method)
	}))
	defer model.Close()
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "api over tls")
	}))
	defer api.Close()
	forge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the agent reached Forge's port: %s %s", r.Method, r.URL)
	}))
	defer forge.Close()
	modelAddr, apiAddr, forgeAddr := model.Listener.Addr().String(), api.Listener.Addr().String(), forge.Listener.Addr().String()
	_, modelPort, _ := net.SplitHostPort(modelAddr)

	script := strings.Join([]string{
		// curl prints the status, or 000 and its exit code when it
		// connected nowhere.
		`get() { out=$(curl -sS -m 10 -o /dev/null -w '%{http_code}' "$@" 2>/dev/null); echo "$out $?"; }`,
		`echo "model $(curl -sS -m 10 http://` + modelAddr + `/v1)"`,
		`echo "api $(curl -sS -m 10 -k https://` + apiAddr + `/v1)"`,
		`echo "forge $(get http://` + forgeAddr + `/metrics)"`,
		`echo "forge-tls $(curl -sS -m 10 -k -o /dev/null -w '%{http_connect}' https://` + forgeAddr + `/ 2>/dev/null)"`,
		`echo "postgres $(get http://127.0.0.1:5432/)"`,
		`echo "by-name $(get http://localhost:` + modelPort + `/v1)"`,
		`echo "raw-model $(get --noproxy '*' http://` + modelAddr + `/v1)"`,
		`echo "raw-postgres $(get --noproxy '*' http://127.0.0.1:5432/)"`,
		`echo "no-proxy [$NO_PROXY] [$no_proxy]"`,
	}, "\n")
	e := newExec(t, ExecConfig{
		Command:    []string{"sh", "-c", script},
		AllowHosts: []string{modelAddr, apiAddr, "localhost:" + modelPort},
	})
	res, err := e.Run(context.Background(), request(t.TempDir()))
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, res.Output)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(res.Output), "\n") {
		k, v, _ := strings.Cut(line, " ")
		got[k] = v
	}
	for k, want := range map[string]string{
		"model":     "model via GET",
		"api":       "api over tls",
		"forge":     "403 0",
		"forge-tls": "403", // the answer to curl's CONNECT
		"postgres":  "403 0",
		"by-name":   "403 0",
		// curl exit 7: could not connect; the sandbox has loopback only.
		"raw-model":    "000 7",
		"raw-postgres": "000 7",
		"no-proxy":     "[] []",
	} {
		if !strings.HasPrefix(got[k], want) {
			t.Errorf("%s: got %q, want %q\n%s", k, got[k], want, res.Output)
		}
	}
	refused := strings.Join(res.Refused, "\n")
	for _, want := range []string{forgeAddr + ": not in the runtime's allow_hosts", "127.0.0.1:5432: not in", "localhost:" + modelPort + ": localhost resolves only to loopback"} {
		if !strings.Contains(refused, want) {
			t.Errorf("refusals %q lack %q", res.Refused, want)
		}
	}
	if strings.Contains(refused, modelAddr+":") || strings.Contains(refused, apiAddr+":") {
		t.Errorf("an allowed host was refused: %q", res.Refused)
	}
}

func TestCheckAllowHosts(t *testing.T) {
	for _, tt := range []struct {
		hosts   []string
		network string
		wantErr string
	}{
		{[]string{"api.anthropic.com:443", "127.0.0.1:11434", "[::1]:8080", "10.0.0.5:80"}, NetworkAllow, ""},
		{[]string{"api.anthropic.com"}, NetworkAllow, "not host:port"},
		{[]string{"api.anthropic.com:https"}, NetworkAllow, "port must be a number"},
		{[]string{"169.254.169.254:80"}, NetworkAllow, "link-local"},
		{[]string{"[fe80::1]:80"}, NetworkAllow, "link-local"},
		{[]string{"0.0.0.0:80"}, NetworkAllow, "unspecified"},
		{nil, NetworkAllow, "needs allow_hosts"},
		{[]string{"api.anthropic.com:443"}, NetworkNone, "needs network allow"},
		{nil, "closed", "network must be"},
	} {
		err := checkSandboxPaths(nil, nil, tt.network, tt.hosts)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s %q: got %v, want %q", tt.network, tt.hosts, err, tt.wantErr)
		}
	}
}

// TestEgressResolve: a name is reached only at a public address; an entry
// naming a loopback or private address reaches it; the address checked is
// the one returned for dialling.
func TestEgressResolve(t *testing.T) {
	p := &egress{allow: []hostPort{}}
	for _, s := range []string{"localhost:80", "127.0.0.1:11434", "10.1.2.3:443", "[::1]:8080"} {
		h, err := parseHostPort(s)
		if err != nil {
			t.Fatal(err)
		}
		p.allow = append(p.allow, h)
	}
	for _, tt := range []struct {
		target, want, wantErr string
	}{
		{"127.0.0.1:11434", "127.0.0.1:11434", ""},
		{"127.0.0.1:11435", "", "not in the runtime's allow_hosts"},
		{"10.1.2.3:443", "10.1.2.3:443", ""},
		{"[::1]:8080", "[::1]:8080", ""},
		{"[::ffff:127.0.0.1]:11434", "127.0.0.1:11434", ""},
		{"LOCALHOST.:80", "", "resolves only to loopback"},
		{"127.0.0.1:5432", "", "not in the runtime's allow_hosts"},
		{"169.254.169.254:80", "", "not in the runtime's allow_hosts"},
	} {
		addr, err := p.resolve(context.Background(), tt.target)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: got %v, %v; want error %q", tt.target, addr, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || addr != netip.MustParseAddrPort(tt.want)):
			t.Errorf("%s: got %v, %v; want %s", tt.target, addr, err, tt.want)
		}
	}
}

// TestRunCommandNetworkAllow: run_command's programs under network: allow
// reach the allowed server through the proxy and not another loopback
// port; the model reads the refusal in the command's output, and the
// call reports it.
func TestRunCommandNetworkAllow(t *testing.T) {
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "local model") }))
	defer model.Close()
	dir := t.TempDir()
	o, err := NewOpenAI(OpenAIConfig{BaseURL: "http://127.0.0.1:1/v1", Model: "m", AllowCommands: []string{"curl"},
		AllowHosts: []string{model.Listener.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	box, err := openSandbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	ts := o.toolSet(box, request(dir))
	ts.offered = toolsFor(agent.Implementer, []string{"curl"})
	ts.jail.writable = true
	if out := ts.call(context.Background(), "run_command", mustJSON(t, map[string]any{"argv": []string{"curl", "-sS", model.URL}})); out != "exit status 0\nlocal model" {
		t.Errorf("allowed: %q", out)
	}
	out := ts.call(context.Background(), "run_command", mustJSON(t, map[string]any{"argv": []string{"curl", "-sS", "-f", "http://127.0.0.1:5432/"}}))
	if !strings.Contains(out, "403") || !strings.Contains(out, "the sandbox refused these connections") || !strings.Contains(out, "127.0.0.1:5432: not in the runtime's allow_hosts") {
		t.Errorf("refused: %q", out)
	}
	if len(ts.refused) != 1 || !strings.HasPrefix(ts.refused[0], "127.0.0.1:5432: ") {
		t.Errorf("refusals of the call: %q", ts.refused)
	}
}
