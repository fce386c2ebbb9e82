package agents

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limits of the egress proxy.
const (
	// maxRefusals bounds the distinct refusals one call reports.
	maxRefusals = 20
	// egressDialTimeout bounds one connection to an allowed host.
	egressDialTimeout = 30 * time.Second
	// proxySocket is the proxy's socket in its directory.
	proxySocket = "proxy.sock"
)

// errRefused marks a connection the allow-list refuses.
var errRefused = errors.New("refused")

// hostPort is one allow_hosts entry: a DNS name or an IP address, and a
// port.
type hostPort struct {
	host string // lower case, without a trailing dot or brackets
	ip   netip.Addr
	port uint16
}

func (h hostPort) String() string {
	return net.JoinHostPort(h.host, strconv.Itoa(int(h.port)))
}

// parseHostPort reads "host:port" as a client names its target (an
// allow_hosts entry, a CONNECT request, an absolute URL's host).
func parseHostPort(s string) (hostPort, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return hostPort{}, fmt.Errorf("%q is not host:port: %w", s, err)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return hostPort{}, fmt.Errorf("%q: the port must be a number from 1 to 65535", s)
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return hostPort{}, fmt.Errorf("%q has no host", s)
	}
	h := hostPort{host: host, port: uint16(n)}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return hostPort{}, fmt.Errorf("%q: an address with a zone is refused", s)
		}
		h.ip = ip.Unmap()
		h.host = h.ip.String()
	}
	return h, nil
}

// checkAllowHosts refuses an allow_hosts entry Forge would never let
// through: one that is not host:port, and an address no agent may reach
// even when named (link-local, where cloud metadata services answer;
// unspecified; multicast).
func checkAllowHosts(hosts []string) error {
	for _, s := range hosts {
		h, err := parseHostPort(s)
		if err != nil {
			return fmt.Errorf("allow_hosts: %w", err)
		}
		if h.ip.IsValid() && neverReached(h.ip) {
			return fmt.Errorf("allow_hosts: %q is a link-local, unspecified or multicast address (a cloud's metadata service answers at 169.254.169.254), which no agent may reach", s)
		}
	}
	return nil
}

// neverReached are the addresses refused even when an entry names them.
func neverReached(ip netip.Addr) bool {
	return ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() || ip.IsUnspecified()
}

// cgnat is the shared address space (RFC 6598) providers use inside their
// networks.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// internal are the addresses a name may not resolve to: only an entry that
// names the address itself reaches them (127.0.0.1:11434), so a public
// name pointed at loopback, a private network or a metadata service
// reaches nothing.
func internal(ip netip.Addr) bool {
	return neverReached(ip) || ip.IsLoopback() || ip.IsPrivate() || cgnat.Contains(ip)
}

// egress is the proxy of one agent process whose runtime has network:
// allow. It listens on a unix socket in a directory of its own, which the
// sandbox shows at /run/forge; inside, the relay (relay.go) makes it
// 127.0.0.1:PORT for HTTPS_PROXY and HTTP_PROXY. It answers CONNECT (any
// TLS client) and absolute-URI requests (plain http://), lets through only
// the allow_hosts pairs, dialling the address it checked, and refuses and
// records everything else.
type egress struct {
	allow []hostPort
	dir   string
	ln    net.Listener
	srv   *http.Server

	// stop ends the tunnels, which the server no longer tracks once
	// hijacked.
	stop   context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	refused []string
	seen    map[string]bool
	closed  bool
}

// startEgress listens for one agent process, in a new directory readable
// by uid (-1: Forge's own).
func startEgress(hosts []string, uid int) (*egress, error) {
	p := &egress{seen: map[string]bool{}}
	p.stop, p.cancel = context.WithCancel(context.Background())
	for _, s := range hosts {
		h, err := parseHostPort(s)
		if err != nil {
			return nil, err
		}
		p.allow = append(p.allow, h)
	}
	dir, err := os.MkdirTemp("", "forge-egress-")
	if err != nil {
		return nil, fmt.Errorf("make the network proxy's directory: %w", err)
	}
	p.dir = dir
	if p.ln, err = net.Listen("unix", filepath.Join(dir, proxySocket)); err != nil {
		os.RemoveAll(dir)
		p.cancel()
		return nil, fmt.Errorf("start the network proxy: %w", err)
	}
	if uid >= 0 {
		// The agent's own uid connects to the socket: the directory and
		// the socket are its, and no other uid's.
		for _, name := range []string{dir, filepath.Join(dir, proxySocket)} {
			if err := os.Lchown(name, uid, uid); err != nil {
				p.ln.Close()
				os.RemoveAll(dir)
				p.cancel()
				return nil, fmt.Errorf("give the network proxy's socket to the sandbox's uid: %w", err)
			}
		}
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go p.srv.Serve(p.ln)
	return p, nil
}

// Close stops the proxy and its connections, and returns what it refused.
// It may be called more than once.
func (p *egress) Close() []string {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	first := !p.closed
	p.closed = true
	p.mu.Unlock()
	if first {
		p.cancel()
		p.srv.Close()
		os.RemoveAll(p.dir)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.refused)
}

// refuse records a refusal once per target and reason.
func (p *egress) refuse(target string, err error) {
	line := target + ": " + strings.TrimPrefix(err.Error(), errRefused.Error()+": ")
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen[line] || len(p.refused) >= maxRefusals {
		return
	}
	p.seen[line] = true
	p.refused = append(p.refused, line)
}

// resolve checks target against the allow-list and returns the address
// to dial: the entry's own address, or the first public address its name
// resolves to. Dialling what was checked leaves no second lookup for a
// name to answer differently.
func (p *egress) resolve(ctx context.Context, target string) (netip.AddrPort, error) {
	h, err := parseHostPort(target)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: %v", errRefused, err)
	}
	if !slices.ContainsFunc(p.allow, func(a hostPort) bool { return a.host == h.host && a.port == h.port }) {
		return netip.AddrPort{}, fmt.Errorf("%w: not in the runtime's allow_hosts", errRefused)
	}
	if h.ip.IsValid() {
		if neverReached(h.ip) {
			return netip.AddrPort{}, fmt.Errorf("%w: a link-local, unspecified or multicast address", errRefused)
		}
		return netip.AddrPortFrom(h.ip, h.port), nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", h.host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: resolve %s: %v", errRefused, h.host, err)
	}
	for _, ip := range addrs {
		if ip = ip.Unmap(); !internal(ip) {
			return netip.AddrPortFrom(ip, h.port), nil
		}
	}
	return netip.AddrPort{}, fmt.Errorf("%w: %s resolves only to loopback, private or link-local addresses (%v); name the address itself in allow_hosts to reach it", errRefused, h.host, addrs)
}

// dial connects to an allowed target, or records and returns the refusal.
func (p *egress) dial(ctx context.Context, target string) (net.Conn, error) {
	addr, err := p.resolve(ctx, target)
	if err == nil {
		d := net.Dialer{Timeout: egressDialTimeout}
		var conn net.Conn
		if conn, err = d.DialContext(ctx, "tcp", addr.String()); err == nil {
			return conn, nil
		}
		return nil, err
	}
	p.refuse(target, err)
	return nil, err
}

// ServeHTTP answers one request of the agent: CONNECT host:port, or a
// request for an absolute http:// URL.
func (p *egress) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "forge network proxy: send CONNECT host:port, or an absolute http:// URL", http.StatusBadRequest)
		return
	}
	target := r.URL.Host
	if r.URL.Port() == "" {
		target = net.JoinHostPort(r.URL.Hostname(), "80")
	}
	conn, err := p.dial(r.Context(), target)
	if err != nil {
		p.fail(w, target, err)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		out.Header.Del(h)
	}
	// One connection per request: the next request, maybe for another
	// host, is checked on its own.
	tr := &http.Transport{
		DialContext:        func(context.Context, string, string) (net.Conn, error) { return conn, nil },
		DisableKeepAlives:  true,
		DisableCompression: true,
	}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(out)
	if err != nil {
		http.Error(w, "forge network proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if k == "Connection" || k == "Keep-Alive" {
			continue
		}
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	// Streamed answers (server-sent events) reach the agent as they come.
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// tunnel answers CONNECT: the agent's bytes (TLS, usually) go to the
// allowed target and back, unread.
func (p *egress) tunnel(w http.ResponseWriter, r *http.Request) {
	target := r.Host
	conn, err := p.dial(r.Context(), target)
	if err != nil {
		p.fail(w, target, err)
		return
	}
	defer conn.Close()
	client, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer client.Close()
	stop := context.AfterFunc(p.stop, func() { client.Close(); conn.Close() })
	defer stop()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	splice(client, conn, buf.Reader)
}

// fail answers a refused or failed connection: 403 with the reason for a
// refusal, 502 for a target that did not answer.
func (p *egress) fail(w http.ResponseWriter, target string, err error) {
	status := http.StatusBadGateway
	if errors.Is(err, errRefused) {
		status = http.StatusForbidden
	}
	http.Error(w, fmt.Sprintf("forge network proxy: %s: %v", target, err), status)
}

// splice copies both ways until either side ends, including what the
// client sent after its request line before the tunnel opened.
func splice(client, target net.Conn, pending *bufio.Reader) {
	done := make(chan struct{}, 2)
	go func() {
		var src io.Reader = client
		if pending != nil && pending.Buffered() > 0 {
			src = io.MultiReader(io.LimitReader(pending, int64(pending.Buffered())), client)
		}
		io.Copy(target, src)
		closeWrite(target)
		done <- struct{}{}
	}()
	go func() {
		io.Copy(client, target)
		closeWrite(client)
		done <- struct{}{}
	}()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
