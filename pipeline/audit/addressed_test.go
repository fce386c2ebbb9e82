package audit

import (
	"fmt"
	"testing"
)

func TestFindingRepeats(t *testing.T) {
	const plan = "docs/plans/plan-001-x.md"
	tested := Finding{Severity: SeverityBlocking, Location: plan + ":31",
		Description: "Testing never checks that docs/hello.md exists after the phase, so a phase that writes nothing would pass."}
	tests := []struct {
		name   string
		f, g   Finding
		repeat bool
	}{
		{"the same words", tested, tested, true},
		{"reworded, the line moved, the severity lowered", tested, Finding{Severity: SeverityMedium, Location: plan + ":40",
			Description: "Testing still does not check that docs/hello.md exists after the phase."}, true},
		{"the repeat names no location", tested, Finding{Severity: SeverityBlocking, Description: tested.Description}, true},
		{"another problem of the same file", tested, Finding{Severity: SeverityMinor, Location: plan + ":5",
			Description: "The Objective could say who reads the page."}, false},
		{"the same words about another file", Finding{Location: "a/limit.go:3", Description: "The limiter is never reset between requests."},
			Finding{Location: "b/limit.go:3", Description: "The limiter is never reset between requests."}, false},
		{"the pre-flight on another path", Finding{Location: plan + ":12", Description: "`docs/a.md` under ## Changes does not exist and is not marked new"},
			Finding{Location: plan + ":12", Description: "`docs/b.md` under ## Changes does not exist and is not marked new"}, false},
		{"the pre-flight on another section", Finding{Location: plan + ":20", Description: "Section ## Risks is empty"},
			Finding{Location: plan + ":20", Description: "Section ## Scope is empty"}, false},
		{"the pre-flight again, lines below", Finding{Location: plan + ":12", Description: "Placeholder text `TODO` left in the plan"},
			Finding{Location: plan + ":15", Description: "Placeholder text `TODO` left in the plan"}, true},
		{"a word or two in common", Finding{Description: "The rollback is missing from the risks."},
			Finding{Description: "The migration is missing an index."}, false},
		{"the repeat backticks a name written plainly before", tested, Finding{Severity: SeverityBlocking, Location: plan + ":31",
			Description: "Testing never checks that `docs/hello.md` exists after the phase, so a phase that writes nothing would pass."}, true},
		{"a name backticked, then written plainly", Finding{Location: plan + ":12", Description: "`docs/a.md` under ## Changes does not exist and is not marked new"},
			Finding{Location: plan + ":12", Description: "docs/a.md under Changes does not exist and is not marked new"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Repeats(tt.g); got != tt.repeat {
				t.Errorf("Repeats = %v, want %v\n%q\n%q", got, tt.repeat, tt.f.Description, tt.g.Description)
			}
		})
	}
}

func TestAddressed(t *testing.T) {
	a := Finding{Severity: SeverityBlocking, Location: "p.md:30", Description: "Testing never checks that the page exists."}
	b := Finding{Severity: SeverityMinor, Location: "p.md:5", Description: "The Objective could say who reads the page."}
	c := Finding{Severity: SeverityMedium, Location: "p.md:20", Description: "The rollback is not described."}
	p1 := Finding{Severity: SeverityMedium, Location: "p.md:12", Description: "`docs/x.md` under ## Changes does not exist and is not marked new"}
	p2 := Finding{Severity: SeverityMedium, Location: "p.md:14", Description: "Placeholder text `TODO` left in the plan"}
	round := func(n int, v Severity, fs ...Finding) Round {
		return Round{Round: n, Verdict: v, ReviewID: int64(100 + n), Findings: fs}
	}
	pre := func(n int, fs ...Finding) Round {
		r := round(n, SeverityMedium, fs...)
		r.Preflight = true
		return r
	}
	tests := []struct {
		name   string
		rounds []Round
		next   Round
		want   string
	}{
		{"the first round", nil, round(1, SeverityBlocking, a), "[]"},
		{"one fixed, one repeated", []Round{round(1, SeverityBlocking, a, b)}, round(2, SeverityMinor, b), "[1:[a]]"},
		{"all fixed: ready to approve, no finding", []Round{round(1, SeverityBlocking, a, b)}, round(2, SeverityMinor), "[1:[a b]]"},
		{"repeated, then fixed: every round's comment", []Round{round(1, SeverityBlocking, a, b), round(2, SeverityBlocking, b, c)},
			round(3, SeverityMinor), "[1:[b] 2:[b c]]"},
		{"fixed earlier is not judged again", []Round{round(1, SeverityBlocking, a, b), round(2, SeverityMinor, b)},
			round(3, SeverityMinor, b), "[]"},
		{"no markers judge nothing", []Round{round(1, SeverityBlocking, a)}, round(2, SeverityNone), "[]"},
		{"needs revision alone judges nothing", []Round{round(1, SeverityBlocking, a)}, round(2, SeverityBlocking), "[]"},
		{"a clean JSON answer addresses all", []Round{round(1, SeverityBlocking, a, b)}, Round{Round: 2, Verdict: SeverityNone, Clean: true}, "[1:[a b]]"},
		{"the pre-flight does not judge the auditor's", []Round{round(1, SeverityBlocking, a)}, pre(2, p1), "[]"},
		{"the pre-flight judges its own", []Round{pre(1, p1, p2)}, pre(2, p2), "[1:[p1]]"},
		{"past the pre-flight: its findings and the auditor's before it", []Round{round(1, SeverityBlocking, a, b), pre(2, p1)},
			round(3, SeverityMinor, b), "[1:[a] 2:[p1]]"},
	}
	names := map[string]string{a.Description: "a", b.Description: "b", c.Description: "c", p1.Description: "p1", p2.Description: "p2"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := "["
			for i, r := range Addressed(tt.rounds, tt.next) {
				if i > 0 {
					got += " "
				}
				if r.ReviewID != int64(100+r.Round) {
					t.Errorf("round %d lost its review: %d", r.Round, r.ReviewID)
				}
				var fs []string
				for _, f := range r.Findings {
					fs = append(fs, names[f.Description])
				}
				got += fmt.Sprintf("%d:%v", r.Round, fs)
			}
			if got += "]"; got != tt.want {
				t.Errorf("Addressed = %s, want %s", got, tt.want)
			}
		})
	}
}
