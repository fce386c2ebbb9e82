package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/forge-dev/forge/internal/browsertest"
)

// TestPlaygroundTypoInABrowser: a person who misspells a command on the
// playground's issue sees Forge ask whether they meant the command, and
// no pull request appears.
func TestPlaygroundTypoInABrowser(t *testing.T) {
	d := start(t, Options{})
	p := &person{t: t, b: browsertest.New(t)}
	p.open(d.URL + "/issues/1")
	p.do(chromedp.SendKeys(chromedp.CSS("#comment-body"), "/forge aprove"))
	p.click("#comment-submit", "#comment-body")
	p.stay()
	p.see(30*time.Second, "Forge's question", has(".comment.bot", "Did you mean /forge approve?"))
	answer := p.text(".comment.bot")
	for _, want := range []string{"Forge started nothing: aprove is not a command", "Usage: /forge approve [plan-NNN]", "/forge new <description>"} {
		if !strings.Contains(answer, want) {
			t.Errorf("Forge's answer lacks %q:\n%s", want, answer)
		}
	}
	p.screenshot("demo-typo.png", ".comment.bot", "end")
	// Give a plan the time it would take to open its pull request.
	time.Sleep(2 * time.Second)
	p.open(d.URL + "/pulls")
	if browsertest.Get(p.b, 5*time.Second, chromedp.Evaluate[bool](`document.querySelector(".issue-row") !== null`)) {
		t.Errorf("a pull request was opened: %s", p.text("#live"))
	}
	if n := len(d.GitHub.Repo(sampleRepo).Branches()); n != 1 {
		t.Errorf("%d branches, want main alone", n)
	}
	if errs := p.b.Errors(); len(errs) > 0 {
		t.Errorf("the pages threw: %q", errs)
	}
}
