package browsertest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/forge-dev/forge/internal/browsertest"
)

// TestBrowserRunsScript drives a page whose text exists only once its
// script ran and a click happened: the browser is real, not a fetch.
func TestBrowserRunsScript(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>t</title><p id="out">before</p>
<button id="b" onclick="document.getElementById('out').textContent='clicked'">go</button>
<script>document.getElementById('out').textContent='scripted'</script>`)
	}))
	defer srv.Close()

	b := browsertest.New(t)
	b.Do(30*time.Second, chromedp.Navigate(srv.URL))
	before := browsertest.Get(b, 10*time.Second, chromedp.Text(chromedp.CSS("#out")))
	b.Do(10*time.Second, chromedp.Click(chromedp.CSS("#b")))
	after := browsertest.Get(b, 10*time.Second, chromedp.Text(chromedp.CSS("#out")))
	if before != "scripted" || after != "clicked" {
		t.Fatalf("page read %q then %q, want scripted then clicked", before, after)
	}

	shot := filepath.Join(t.TempDir(), "page.png")
	b.Screenshot(shot)
	data, err := os.ReadFile(shot)
	if err != nil || len(data) < 8 || string(data[1:4]) != "PNG" {
		t.Fatalf("screenshot is not a PNG (%d bytes, %v)", len(data), err)
	}
}

// TestBrowserReportsThrownErrors: a page's uncaught exception is kept, so
// a test can fail on a page that broke.
func TestBrowserReportsThrownErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><p id="x">x</p><script>throw new Error("boom")</script>`)
	}))
	defer srv.Close()
	b := browsertest.New(t)
	b.Do(30*time.Second, chromedp.Navigate(srv.URL), chromedp.WaitVisible(chromedp.CSS("#x")))
	deadline := time.Now().Add(5 * time.Second)
	for len(b.Errors()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if errs := b.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "boom") {
		t.Fatalf("errors %q, want the one the page threw", errs)
	}
}

// TestBrowserUsesAPageThatSwapsItsParts reads and clicks a part a script
// replaces every few milliseconds, as live.js replaces a dashboard's main
// part: a node found by a query and gone before it is read or clicked is
// looked up again, never read as "" nor a failed test.
func TestBrowserUsesAPageThatSwapsItsParts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><main id="m"></main><script>
var m = document.getElementById("m"), clicks = 0;
function swap() { m.innerHTML = '<p class="v">live</p><button id="b" onclick="clicks++">go</button>'; }
swap(); setInterval(swap, 40);
</script>`)
	}))
	defer srv.Close()
	b := browsertest.New(t)
	b.Do(30*time.Second, chromedp.Navigate(srv.URL))
	for i := 0; i < 60; i++ {
		if v := browsertest.Text(b, 10*time.Second, "p.v"); v != "live" {
			t.Fatalf("read %q", v)
		}
		b.Do(10*time.Second, chromedp.Click(chromedp.CSS("#b")))
	}
	if n := browsertest.Get(b, 10*time.Second, chromedp.Evaluate[int]("clicks")); n == 0 {
		t.Fatalf("no click reached the page")
	}
}
