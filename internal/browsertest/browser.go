// Package browsertest drives headless Chromium for the tests that assert
// what a person sees in a browser: the demo's pages and the dashboard.
//
// It runs Debian's chromium (FORGE_CHROMIUM names another binary), which
// .ci/run installs. A test that needs a browser fails without one: a
// skipped browser test would pass on a machine that checked nothing.
package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Browser is one headless Chromium with one tab, closed when the test ends.
type Browser struct {
	t   testing.TB
	ctx context.Context

	mu     sync.Mutex
	errors []string // uncaught exceptions the pages threw
}

// binary is the Chromium to run.
func binary() (string, error) {
	if p := os.Getenv("FORGE_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium found: install Debian's chromium (`apt-get install chromium`, as .ci/run does) or set FORGE_CHROMIUM")
}

// New starts Chromium for t. Its network use is only what the pages ask
// for: background networking, sync and component updates are off (this
// machine's network is closed, and a test must not depend on Google).
func New(t testing.TB) *Browser {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.DisableGPU,
		chromedp.NoSandbox, // the tests run as root in CI; Chromium's sandbox refuses root
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	b := &Browser{t: t, ctx: ctx}
	// The first action starts the browser, which then lives as long as
	// that action's context: so ctx itself, not one with a timeout. A
	// missing or broken Chromium fails here, with its cause.
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("starting %s: %v", bin, err)
	}
	thrown := chromedp.Events(ctx, runtime.ExceptionThrown)
	go func() {
		for ev, err := range thrown {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.errors = append(b.errors, exceptionText(ev.ExceptionDetails))
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	return b
}

// Context is the tab's context, for chromedp calls a test makes itself.
func (b *Browser) Context() context.Context { return b.ctx }

// Do runs steps in the tab, in order, within timeout, and fails the test
// on an error, saving a screenshot and the HTML of the page beside the
// test's output (FORGE_TEST_ARTIFACTS, or the test's temporary directory)
// to show what the page was.
func (b *Browser) Do(timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if _, err := again(ctx, func() (struct{}, error) { return struct{}{}, chromedp.Do(ctx, steps...) }); err != nil {
		b.fail(err)
	}
}

// Get runs one action that returns a value, as Do does.
func Get[T any](b *Browser, timeout time.Duration, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	v, err := again(ctx, func() (T, error) { return chromedp.Run(ctx, a) })
	if err != nil {
		b.fail(err)
	}
	return v
}

// again runs f until it succeeds, fails for another reason than a node
// that went away, or ctx ends. A live page swaps its main part while a
// test reads it (live.js): a node found by a query can be gone by the
// time the action uses it, and the same query then finds the new one.
func again[T any](ctx context.Context, f func() (T, error)) (T, error) {
	for {
		v, err := f()
		if err == nil || !nodeGone(err) || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// nodeGone is the DevTools protocol's answer for a node no longer in the
// document (or a page context no longer there).
func nodeGone(err error) bool {
	var e *cdproto.Error
	if !errors.As(err, &e) {
		return false
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "node with given id") || strings.Contains(m, "node is detached") ||
		strings.Contains(m, "could not compute box model") || strings.Contains(m, "cannot find context with specified id")
}

// Text is the rendered text of the first element css matches, found and
// read in one turn of the page's script: on a live page that swaps its
// parts, chromedp.Text can read a node that left the document between
// the two, which reads as "". It waits for the element as chromedp's
// queries do.
func Text(b *Browser, timeout time.Duration, css string) string {
	b.t.Helper()
	sel, _ := json.Marshal(css)
	type read struct {
		Found bool   `json:"found"`
		Text  string `json:"text"`
	}
	js := `(() => { const e = document.querySelector(` + string(sel) + `); return e ? {found: true, text: e.innerText} : {found: false, text: ""}; })()`
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	for {
		r, err := again(ctx, func() (read, error) { return chromedp.Run(ctx, chromedp.Evaluate[read](js)) })
		if err != nil {
			b.fail(fmt.Errorf("read %s: %w", css, err))
		}
		if r.Found {
			return r.Text
		}
		select {
		case <-ctx.Done():
			b.fail(fmt.Errorf("no element matches %s", css))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (b *Browser) fail(err error) {
	b.t.Helper()
	shot := b.saveFailure()
	b.t.Fatalf("browser: %v (page: %s)%s", err, shot, b.thrown())
}

// Screenshot saves a PNG of the whole page to path.
func (b *Browser) Screenshot(path string) {
	b.t.Helper()
	png := Get(b, 30*time.Second, chromedp.FullScreenshot(100)) // 100: PNG; below, JPEG
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// Errors is every uncaught exception the pages threw so far.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

func (b *Browser) thrown() string {
	errs := b.Errors()
	if len(errs) == 0 {
		return ""
	}
	return "\nthe page threw:\n  " + strings.Join(errs, "\n  ")
}

// saveFailure writes the page's screenshot and HTML where a person can
// look at them, and says where.
func (b *Browser) saveFailure() string {
	dir := os.Getenv("FORGE_TEST_ARTIFACTS")
	if dir == "" {
		dir = b.t.TempDir()
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(b.t.Name())
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return fmt.Sprintf("not saved: %v", err)
	}
	html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil {
		return fmt.Sprintf("not saved: %v", err)
	}
	base := filepath.Join(dir, name)
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(base+".png", png, 0o644)
	_ = os.WriteFile(base+".html", []byte(html), 0o644)
	return base + ".png"
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "an exception"
	}
	text := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		text = d.Exception.Description
	}
	return fmt.Sprintf("%s (%s:%d:%d)", text, d.URL, d.LineNumber+1, d.ColumnNumber+1)
}
