package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/forge-dev/forge/internal/browsertest"
)

// TestPlaygroundEarlyApprovalInABrowser: a person who approves the plan's
// pull request while Forge still drafts and audits it sees Forge say the
// approval is noted, then, once the audit is clean, the plan approved by
// them and its phases run, without approving again.
func TestPlaygroundEarlyApprovalInABrowser(t *testing.T) {
	// Slow enough for a person to approve before the audit loop ends.
	d := start(t, Options{Pace: 2 * time.Second})
	p := &person{t: t, b: browsertest.New(t)}
	long := 120 * time.Second
	p.open(d.URL + "/issues/1")
	p.do(chromedp.SendKeys(chromedp.CSS("#comment-body"), "/forge add rate limiting to /hello"))
	p.click("#comment-submit", "#comment-body")
	p.stay()
	p.see(long, "Forge's progress comment", has(".comment.bot", "plan-001"))

	// The pull request appears with the draft; approve it at once.
	p.open(d.URL + "/pulls")
	for i := 0; !browsertest.Get(p.b, 5*time.Second, chromedp.Evaluate[bool](`document.querySelector(".issue-row a") !== null`)); i++ {
		if i > 300 {
			t.Fatal("no pull request appeared")
		}
		time.Sleep(100 * time.Millisecond)
		p.open(d.URL + "/pulls")
	}
	p.click(".issue-row a", "#pulltabs")
	if strings.Contains(p.text("#live"), "verdict minor") {
		t.Fatal("the audit loop ended before the approval: slow the model down")
	}
	p.click("#approve", "#pulltabs")
	p.stay()
	p.see(long, "Forge noting the approval", has(".comment.bot", "Approval noted from @"+Person))
	if !strings.Contains(p.text("#live"), "Forge will run the phases once the audit is clean") {
		t.Errorf("the answer does not say when the approval counts:\n%s", p.text("#live"))
	}
	p.screenshot("demo-early-approval.png", "", "")
	p.see(long, "the plan approved by the early approval", has(".comment.bot", "approved for implementation by @"+Person))
	p.see(long, "the phases to run", `document.querySelector("#merge") !== null`)
	if errs := p.b.Errors(); len(errs) > 0 {
		t.Errorf("the pages threw: %q", errs)
	}
}
