package memory

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	long := strings.Repeat("x", MaxText+1)
	tests := []struct {
		name   string
		output string
		want   []Fact
		err    bool
	}{
		{"one fact", `{"facts":[{"category":"gotcha","text":"The store's SQLite pool has one connection.","confidence":0.9}]}`,
			[]Fact{{Category: Gotcha, Text: "The store's SQLite pool has one connection.", Confidence: 0.9}}, false},
		{"fenced", "```json\n{\"facts\":[{\"category\":\"convention\",\"text\":\"Tests are tables.\",\"confidence\":1}]}\n```",
			[]Fact{{Category: Convention, Text: "Tests are tables.", Confidence: 1}}, false},
		{"no facts", `{"facts":[]}`, []Fact{}, false},
		{"text cleaned to one line", "{\"facts\":[{\"category\":\"pattern\",\"text\":\" one\\n\\ttwo\\u200b \\u202ethree \",\"confidence\":0.5}]}",
			[]Fact{{Category: Pattern, Text: "one two three", Confidence: 0.5}}, false},
		{"malformed facts dropped", `{"facts":[
			{"category":"rumour","text":"unknown category","confidence":0.5},
			{"category":"Gotcha","text":"a category in capitals","confidence":0.5},
			{"category":"gotcha","text":"","confidence":0.5},
			{"category":"gotcha","text":"` + long + `","confidence":0.5},
			{"category":"gotcha","text":"no confidence"},
			{"category":"gotcha","text":"confidence above one","confidence":1.5},
			{"category":"gotcha","text":"confidence below zero","confidence":-0.1},
			{"category":"gotcha","text":"confidence a string","confidence":"high"},
			{"category":"gotcha","text":"a key of its own","confidence":0.5,"why":"x"},
			"a string",
			{"category":"decision","text":"kept","confidence":0}]}`,
			[]Fact{{Category: Decision, Text: "kept", Confidence: 0}}, false},
		{"repeats count once", `{"facts":[{"category":"gotcha","text":"Same.","confidence":0.5},{"category":"pattern","text":"same.","confidence":0.9}]}`,
			[]Fact{{Category: Gotcha, Text: "Same.", Confidence: 0.5}}, false},
		{"prose", "Here is what I learned: the store is SQLite.", nil, true},
		{"prose around the object", `Facts: {"facts":[]}`, nil, true},
		{"text after the object", `{"facts":[]} {"facts":[]}`, nil, true},
		{"another key", `{"facts":[],"note":"x"}`, nil, true},
		{"no facts key", `{}`, nil, true},
		{"facts not a list", `{"facts":"none"}`, nil, true},
		{"two fenced blocks", "```json\n{\"facts\":[]}\n```\n```json\n{\"facts\":[]}\n```", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.output)
			if tc.err {
				if !errors.Is(err, ErrNotJSON) {
					t.Fatalf("Parse = %v, %v; want ErrNotJSON", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse = %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseKeepsAtMostMaxFacts(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"facts":[`)
	for i := range MaxFacts + 5 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"category":"gotcha","text":"fact ` + strings.Repeat("i", i+1) + `","confidence":0.5}`)
	}
	b.WriteString(`]}`)
	got, err := Parse(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != MaxFacts || got[0].Text != "fact i" {
		t.Errorf("kept %d facts, the first %q; want the first %d", len(got), got[0].Text, MaxFacts)
	}
}

func TestKeywords(t *testing.T) {
	got := Keywords("Add rate limiting to the webhook endpoint (app/webhook_test.go); the Changes and plans.")
	want := map[string]bool{"rate": true, "limiting": true, "webhook": true, "endpoint": true, "app": true, "test": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Keywords = %v, want %v", got, want)
	}
	if got := Keywords("Webhooks webhook's Webhook"); !reflect.DeepEqual(got, map[string]bool{"webhook": true}) {
		t.Errorf("a plural and a possessive: %v", got)
	}
}

func TestRelevant(t *testing.T) {
	day := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	facts := []Fact{
		{ID: 1, Text: "The webhook endpoint answers 202 before any work.", Confidence: 0.6, Created: day, PR: PRMerged},
		{ID: 2, Text: "Rate limiting of the webhook endpoint lives in app/limits.go.", Confidence: 0.5, Created: day, PR: PRMerged},
		{ID: 3, Text: "The webhook secret is rotated by the operator.", Confidence: 0.9, Created: day, PR: PRMerged},
		{ID: 4, Text: "The webhook payloads are kept for a week.", Confidence: 0.9, Created: day.Add(time.Hour), PR: PRMerged},
		{ID: 5, Text: "Migrations are numbered per dialect.", Confidence: 1, Created: day, PR: PRMerged},
		{ID: 6, Text: "Webhook rate limits were forgotten.", Confidence: 1, Created: day, Forgotten: true, PR: PRMerged},
		// Facts whose plan's pull request has not merged (still open, or
		// closed unmerged) are nobody's reviewed word yet.
		{ID: 7, Text: "Webhook rate limiting endpoint waits for its review.", Confidence: 1, Created: day, PR: PROpen},
		{ID: 8, Text: "Webhook rate limiting endpoint closed unmerged.", Confidence: 1, Created: day, PR: PRClosed},
	}
	ids := func(fs []Fact) []int {
		var out []int
		for _, f := range fs {
			out = append(out, f.ID)
		}
		return out
	}
	// Most shared keywords first (2: rate, limiting, webhook, endpoint),
	// then by confidence (4 and 3 over 1), then the most recent (4 over 3).
	if got := ids(Relevant(facts, "add rate limiting to the webhook endpoint", 8)); !reflect.DeepEqual(got, []int{2, 1, 4, 3}) {
		t.Errorf("Relevant = %v, want [2 1 4 3]", got)
	}
	if got := ids(Relevant(facts, "add rate limiting to the webhook endpoint", 2)); !reflect.DeepEqual(got, []int{2, 1}) {
		t.Errorf("Relevant capped at 2 = %v, want [2 1]", got)
	}
	if got := Relevant(facts, "document the greeting page", 5); len(got) != 0 {
		t.Errorf("facts sharing no keyword: %v", ids(got))
	}
	if got := Relevant(nil, "anything", 5); len(got) != 0 {
		t.Errorf("no facts: %v", got)
	}
}
