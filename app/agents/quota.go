package agents

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// When an agent CLI says its model's quota is spent, and until when. Both
// CLIs print the reset in words for people; these read the shapes they
// print, and a message without one is a quota with no reset (the plan
// backs off).

// claudeResets is Claude Code's "You've hit your session limit • resets
// 4:50pm (America/Denver)" or "… · resets Apr 23 at 4pm (America/Recife)".
var claudeResets = regexp.MustCompile(`(?i)\bresets\s+(?:([a-z]{3})\s+(\d{1,2})\s+at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)\b(?:\s*\(([^)\s]+)\))?`)

// claudeLimitUntil is the older "Claude AI usage limit reached|<unix time>".
var claudeLimitUntil = regexp.MustCompile(`(?i)usage limit reached\|(\d{9,11})\b`)

// claudeReset is the reset a Claude Code limit message names, false when
// it names none.
func claudeReset(text string, now time.Time) (time.Time, bool) {
	if m := claudeLimitUntil.FindStringSubmatch(text); m != nil {
		s, _ := strconv.ParseInt(m[1], 10, 64)
		return time.Unix(s, 0), true
	}
	m := claudeResets.FindStringSubmatch(text)
	if m == nil {
		return time.Time{}, false
	}
	loc := time.Local
	if m[6] != "" {
		if l, err := time.LoadLocation(m[6]); err == nil {
			loc = l
		}
	}
	return clockTime(now, loc, m[1], m[2], "", m[3], m[4], m[5])
}

// codexAt is codex's "Try again at 2:57 PM." or "… at Sep 5th, 2026 2:57
// PM." (codex-rs/core/src/error.rs, UsageLimitReachedError, in the CLI's
// local time); codexIn the older "try again in 2 days 17 hours 14
// minutes"; codexSeconds the fields of the usage_limit_reached error body
// some versions print whole.
var (
	codexAt      = regexp.MustCompile(`(?i)try again at\s+(?:([a-z]{3})\s+(\d{1,2})(?:st|nd|rd|th)?,\s+(\d{4})\s+)?(\d{1,2}):(\d{2})\s*(am|pm)`)
	codexIn      = regexp.MustCompile(`(?i)try again in\s+((?:\d+\s+(?:days?|hours?|minutes?|seconds?)[\s,]*(?:and\s+)?)+)`)
	codexInPart  = regexp.MustCompile(`(?i)(\d+)\s+(day|hour|minute|second)`)
	codexSeconds = regexp.MustCompile(`"resets_in_seconds"\s*:\s*(\d+)`)
	codexResetAt = regexp.MustCompile(`"resets_at"\s*:\s*(\d{9,11})`)
)

// codexQuota reads a codex error message: whether it says a usage or rate
// limit refused the turn, and the reset it names (false for none).
func codexQuota(msg string, now time.Time) (quota bool, reset time.Time, known bool) {
	lower := strings.ToLower(msg)
	for _, s := range []string{"usage limit", "usage_limit_reached", "quota exceeded", "rate limit", "429 too many requests"} {
		if strings.Contains(lower, s) {
			quota = true
		}
	}
	if !quota {
		return false, time.Time{}, false
	}
	if m := codexSeconds.FindStringSubmatch(msg); m != nil {
		s, _ := strconv.ParseInt(m[1], 10, 64)
		return true, now.Add(time.Duration(s) * time.Second), true
	}
	if m := codexResetAt.FindStringSubmatch(msg); m != nil {
		s, _ := strconv.ParseInt(m[1], 10, 64)
		return true, time.Unix(s, 0), true
	}
	if m := codexIn.FindStringSubmatch(msg); m != nil {
		var d time.Duration
		unit := map[string]time.Duration{"day": 24 * time.Hour, "hour": time.Hour, "minute": time.Minute, "second": time.Second}
		for _, p := range codexInPart.FindAllStringSubmatch(m[1], -1) {
			n, _ := strconv.Atoi(p[1])
			d += time.Duration(n) * unit[strings.ToLower(p[2])]
		}
		return true, now.Add(d), d > 0
	}
	if m := codexAt.FindStringSubmatch(msg); m != nil {
		t, ok := clockTime(now, time.Local, m[1], m[2], m[3], m[4], m[5], m[6])
		return true, t, ok
	}
	return true, time.Time{}, false
}

// clockTime is the next time at hour:minute am/pm in loc, on month day
// (of year, else the next such date) when given, else today or tomorrow.
func clockTime(now time.Time, loc *time.Location, month, day, year, hour, minute, ampm string) (time.Time, bool) {
	h, err := strconv.Atoi(hour)
	if err != nil || h < 1 || h > 12 {
		return time.Time{}, false
	}
	h %= 12
	if strings.EqualFold(ampm, "pm") {
		h += 12
	}
	mi := 0
	if minute != "" {
		mi, _ = strconv.Atoi(minute)
	}
	local := now.In(loc)
	if month == "" {
		t := time.Date(local.Year(), local.Month(), local.Day(), h, mi, 0, 0, loc)
		if !t.After(now) {
			t = t.AddDate(0, 0, 1)
		}
		return t, true
	}
	mon, err := time.Parse("Jan", strings.ToUpper(month[:1])+strings.ToLower(month[1:]))
	if err != nil {
		return time.Time{}, false
	}
	d, _ := strconv.Atoi(day)
	y := local.Year()
	if year != "" {
		y, _ = strconv.Atoi(year)
	}
	t := time.Date(y, mon.Month(), d, h, mi, 0, 0, loc)
	if year == "" && !t.After(now) {
		t = t.AddDate(1, 0, 0)
	}
	return t, true
}
