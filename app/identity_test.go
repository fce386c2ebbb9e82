package app

import (
	"context"
	"testing"
)

// TestBotIdentityWrote: only the App's bot user writes Forge's comments;
// where GitHub names the App a comment was performed via, it must be
// Forge's. Logins compare as GitHub's do, without case.
func TestBotIdentityWrote(t *testing.T) {
	self := &botIdentity{appID: 42, login: "forge-test[bot]"}
	for _, tt := range []struct {
		name, login, typ string
		via              int64
		want             bool
	}{
		{"the App's comment", "forge-test[bot]", "Bot", 42, true},
		{"the App's review (no App named)", "forge-test[bot]", "Bot", 0, true},
		{"its login in another case", "Forge-Test[bot]", "Bot", 42, true},
		{"another App's bot", "lookalike[bot]", "Bot", 7, false},
		{"another App's review", "lookalike[bot]", "Bot", 0, false},
		{"a person", "mallory", "User", 0, false},
		{"a person through the App's user token", "mallory", "User", 42, false},
		{"the login performed via another App", "forge-test[bot]", "Bot", 7, false},
	} {
		got, err := self.wrote(context.Background(), tt.login, tt.typ, tt.via)
		if err != nil || got != tt.want {
			t.Errorf("%s: wrote(%q, %q, %d) = %v, %v; want %v", tt.name, tt.login, tt.typ, tt.via, got, err, tt.want)
		}
	}
	var none *botIdentity
	if got, err := none.wrote(context.Background(), "forge-test[bot]", "Bot", 42); got || err != nil {
		t.Errorf("without an identity: %v, %v; want nothing taken as Forge's", got, err)
	}
}
