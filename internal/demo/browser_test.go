package demo

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/forge-dev/forge/internal/browsertest"
)

// ScreenshotsEnv names the directory where the browser tests save their
// screenshots (`make demo-screenshots`): unset, they save none.
const ScreenshotsEnv = "FORGE_SCREENSHOTS"

// person drives the playground's pages in headless Chromium as a person
// would, and checks what they see.
type person struct {
	t *testing.T
	b *browsertest.Browser
}

// do runs steps on the page.
func (p *person) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	p.b.Do(30*time.Second, steps...)
}

// open goes to a page and waits for it.
func (p *person) open(url string) {
	p.t.Helper()
	p.do(chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("main")))
}

// click follows a link or submits a form, and waits for the page it
// leads to to load and show then.
func (p *person) click(sel, then string) {
	p.t.Helper()
	browsertest.Get(p.b, 30*time.Second, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel))))
	p.do(chromedp.WaitVisible(chromedp.CSS(then)))
}

// see waits until the page shows what js says, without reloading it: the
// page updates itself.
func (p *person) see(timeout time.Duration, what, js string) {
	p.t.Helper()
	p.b.Do(timeout+5*time.Second, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if !browsertest.Get(p.b, 5*time.Second, chromedp.Evaluate[bool](`window.__stayed === true`)) {
		p.t.Fatalf("the page reloaded while waiting for %s", what)
	}
}

// stay marks the page, to tell an update in place from a reload.
func (p *person) stay() {
	p.t.Helper()
	p.do(chromedp.Evaluate[chromedp.Void](`window.__stayed = true`))
}

// text is the visible text of the element sel.
func (p *person) text(sel string) string {
	p.t.Helper()
	return browsertest.Text(p.b, 10*time.Second, sel)
}

// has says whether the page shows an element sel whose text holds want.
func has(sel, want string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%s)].some(e => e.innerText.includes(%s))`, quote(sel), quote(want))
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// screenshot saves the page to the directory ScreenshotsEnv names: the
// whole page, or the window scrolled to show the element sel at its top
// (block "start") or its bottom ("end").
func (p *person) screenshot(name, sel, block string) {
	p.t.Helper()
	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		return
	}
	if sel == "" {
		p.b.Screenshot(filepath.Join(dir, name))
		return
	}
	p.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%s).scrollIntoView({block: %s})`, quote(sel), quote(block))))
	png := browsertest.Get(p.b, 30*time.Second, chromedp.CaptureScreenshot())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// TestPlaygroundInABrowser takes a plan from /forge to a merged pull
// request through the pages, in headless Chromium, as a person would:
// open an issue, comment /forge, watch the draft, the blocking audit round
// with its inline comment, the revision and the clean round arrive on the
// pull request, approve it with the forge check's Approve & run button,
// watch the phases commit with their checks, and merge it. Hostile text in
// the issue runs no script.
func TestPlaygroundInABrowser(t *testing.T) {
	d := start(t, Options{})
	p := &person{t: t, b: browsertest.New(t)}
	long := 90 * time.Second

	// The repository's page.
	p.open(d.URL)
	if got := p.text(".repohead h1"); got != "acme / greeter" {
		t.Errorf("repository heading %q", got)
	}
	for _, want := range []string{"main.go", "hello.go", ".github"} {
		if !strings.Contains(p.text("#files"), want) {
			t.Errorf("the file list lacks %s", want)
		}
	}
	if !strings.Contains(p.text(".md"), "Forge's playground") || !strings.Contains(p.text("#login"), Person) {
		t.Error("the page does not say where this is and who is signed in")
	}
	p.screenshot("demo-repository.png", "", "")

	// A new issue, with text meant to run script in the page.
	p.click("#tab-issues", "#new-issue")
	if !strings.Contains(p.text("#live"), firstIssueTitle) {
		t.Errorf("the issue list lacks issue #1")
	}
	p.click("#new-issue", "#issue-title")
	p.do(chromedp.SendKeys(chromedp.CSS("#issue-title"), "Rate-limit GET /hello per client"),
		chromedp.SendKeys(chromedp.CSS("#issue-body"), "One client keeps the service busy. <img src=x onerror=\"window.pwned=1\"> [docs](javascript:window.pwned=2)"))
	p.click("#issue-submit", "#comment-body")
	if loc := browsertest.Get(p.b, 5*time.Second, chromedp.Location()); !strings.HasSuffix(loc, "/issues/2") {
		t.Fatalf("after opening the issue the page is %s", loc)
	}

	// /forge, and Forge's answer arriving on the page.
	p.do(chromedp.SendKeys(chromedp.CSS("#comment-body"), "/forge add rate limiting to /hello"))
	p.click("#comment-submit", "#comment-body")
	p.stay()
	p.see(long, "Forge's eyes on the command", has(`.comment[data-author="octocat"] .reactions`, "👀"))
	p.see(long, "Forge's progress comment", has(".comment.bot", "plan-001"))
	p.see(long, "the forge to finish", has(".comment.bot", "awaits approval"))
	p.screenshot("demo-issue.png", "", "")

	// The plan's pull request: a draft, audited twice, revised between.
	p.click("#tab-pulls", ".issue-row a")
	p.click(".issue-row a", "#pulltabs")
	if got := p.text("#state"); got != "Draft" {
		t.Errorf("the plan's pull request is %q, want Draft", got)
	}
	reviews := p.text("#live")
	for _, want := range []string{"verdict blocking", "Clients are keyed by r.RemoteAddr", "verdict minor", "Resolved",
		"docs/plans/plan-001-add-rate-limiting-to-hello.md, line"} {
		if !strings.Contains(reviews, want) {
			t.Errorf("the conversation lacks %q", want)
		}
	}
	if !browsertest.Get(p.b, 5*time.Second, chromedp.Evaluate[bool](has(`.check[data-name="forge"][data-state="action"] button`, "Approve & run"))) {
		t.Error("the forge check shows no Approve & run button")
	}
	p.screenshot("demo-plan-review.png", "", "")
	p.click("#tab-commits", "#commits")
	commits := p.text("#commits")
	for _, want := range []string{"plan-001: draft", "plan-001: revision 1"} {
		if !strings.Contains(commits, want) {
			t.Errorf("the commits lack %q", want)
		}
	}

	// Approved with the forge check's button; the phases commit, CI runs
	// on each, Forge marks the pull request ready.
	p.click("#tab-conversation", "#approve")
	p.click(`.check[data-name="forge"] button[value="approve"]`, "#pulltabs")
	p.stay()
	p.see(long, "Forge taking the approval", has(".comment.bot", "approved for implementation by @octocat"))
	p.see(long, "the pull request ready to merge", `document.querySelector("#merge") !== null`)
	if got := p.text("#state"); got != "Open" {
		t.Errorf("the pull request after its phases is %q, want Open", got)
	}
	p.see(long, "the post-implementation audit", has(`.thread[data-path="ratelimit/limiter.go"]`, "sweeps idle buckets"))
	p.click("#tab-checks", ".commitchecks")
	for _, run := range []string{"forge", "forge/phase-1", "forge/phase-2", "vet", "test"} {
		if !browsertest.Get(p.b, 5*time.Second, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector('.check[data-name=%s][data-state="success"]') !== null`, quote(run)))) {
			t.Errorf("no successful check %s", run)
		}
	}
	p.screenshot("demo-checks.png", "#pulltabs", "start")
	p.click("#tab-commits", "#commits")
	commits = p.text("#commits")
	for _, want := range []string{"plan-001 phase-1: Implement", "plan-001 phase-2: Implement", "plan-001: phases complete"} {
		if !strings.Contains(commits, want) {
			t.Errorf("the commits lack %q", want)
		}
	}
	p.click("#tab-files", ".file")
	files := p.text("#live")
	for _, want := range []string{"ratelimit/limiter.go", "ratelimit/limiter_test.go", "main_test.go", "net.SplitHostPort"} {
		if !strings.Contains(files, want) {
			t.Errorf("the files changed lack %q", want)
		}
	}
	p.screenshot("demo-files.png", `.file[data-path="ratelimit/limiter.go"]`, "start")

	// Merged: Forge closes the plan, GitHub the issue.
	p.click("#tab-conversation", "#merge")
	p.click("#merge", "#mergebox")
	p.stay()
	if got := p.text("#state"); got != "Merged" {
		t.Errorf("the pull request after the merge is %q", got)
	}
	p.see(long, "Forge marking the plan merged", has(".side", "forge:merged"))
	p.screenshot("demo-merged.png", "#mergebox", "end")
	p.open(d.URL + "/issues/2")
	if got := p.text("#state"); got != "Closed" {
		t.Errorf("issue #2 after the merge is %q", got)
	}
	p.open(d.URL)
	if !strings.Contains(p.text("#files"), "ratelimit") {
		t.Error("main lacks ratelimit/ after the merge")
	}
	// Forge's dashboard, from the playground's banner: signed in through
	// this GitHub's own sign-in as the playground's person, it shows the
	// plan, MERGED after the merge, with its timeline.
	dash := browsertest.Get(p.b, 10*time.Second, chromedp.AttributeValue(chromedp.CSS(`.md a[href$="/ui"]`), "href")).Value
	if dash != d.Dashboard {
		t.Errorf("the banner's dashboard link is %q, want %q", dash, d.Dashboard)
	}
	p.do(chromedp.Navigate(dash), chromedp.WaitVisible(chromedp.CSS("#authorize")))
	p.click("#authorize", "strong#login")
	if who := p.text("strong#login"); who != Person {
		t.Errorf("signed in to the dashboard as %q, want %s", who, Person)
	}
	row := p.text(`tr.plan[data-plan="` + sampleRepo + `/plan-001"]`)
	for _, want := range []string{"plan-001", "MERGED", "3/3"} { // two phases and the final audit
		if !strings.Contains(row, want) {
			t.Errorf("the dashboard's row of plan-001 lacks %q: %q", want, row)
		}
	}
	p.screenshot("demo-dashboard.png", "", "")
	p.click(`tr.plan[data-plan="`+sampleRepo+`/plan-001"] td.id a`, "table.timeline")
	if tl := p.text("table.timeline"); !strings.Contains(tl, "createCommitOnBranch") || !strings.Contains(tl, "implementer") {
		t.Errorf("the plan's timeline lacks its commits or its implementer:\n%s", tl)
	}
	p.screenshot("demo-dashboard-plan.png", "", "")

	if pwned := browsertest.Get(p.b, 5*time.Second, chromedp.Evaluate[bool](`window.pwned !== undefined`)); pwned {
		t.Error("the issue's text ran script")
	}
	if errs := p.b.Errors(); len(errs) > 0 {
		t.Errorf("the pages threw: %q", errs)
	}
}
