package ghdouble

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"testing"

	"github.com/google/go-github/v66/github"
)

// TestTeamMembership: GitHub's answer to a person's team membership:
// active or pending with its role, a child team's members counted, 404
// for a person who is no member, a team that does not exist and another
// organization's team; 403 without the Members permission.
func TestTeamMembership(t *testing.T) {
	s, _ := newRecorded(t)
	inst := s.AddInstallation("acme")
	s.AddInstallation("other")
	s.SetTeamMember("acme", "security", "sam", "active")
	s.SetTeamMember("acme", "security", "pat", "pending")
	s.AddTeam("acme", "appsec", "security")
	s.SetTeamMember("acme", "appsec", "ann", "active")
	s.SetTeamMember("acme", "appsec", "pat", "active")
	s.SetTeamMember("other", "security", "olga", "active")
	s.SetTeamMember("acme", "security", "gone", "active")
	s.SetTeamMember("acme", "security", "gone", "none")
	gh := client(t, s, inst)
	ctx := context.Background()
	tests := []struct {
		team, user string
		status     int
		state      string
	}{
		{"security", "sam", 200, "active"},
		{"security", "SAM", 200, "active"},
		{"security", "ann", 200, "active"}, // through the child team appsec
		{"security", "pat", 200, "active"}, // pending here, active in appsec
		{"appsec", "sam", 404, ""},         // a parent's members are not the child's
		{"security", "gone", 404, ""},
		{"security", "nobody", 404, ""},
		{"missing", "sam", 404, ""},
	}
	for _, tt := range tests {
		m, resp, err := gh.Teams.GetTeamMembershipBySlug(ctx, "acme", tt.team, tt.user)
		if resp == nil || resp.StatusCode != tt.status {
			t.Errorf("%s/%s: %v %v, want %d", tt.team, tt.user, resp, err, tt.status)
			continue
		}
		if tt.status == 200 && (m.GetState() != tt.state || m.GetRole() != "member") {
			t.Errorf("%s/%s: %+v", tt.team, tt.user, m)
		}
	}
	s.SetTeamMember("acme", "security", "pat", "pending")
	s.SetTeamMember("acme", "appsec", "pat", "none")
	if m, _, err := gh.Teams.GetTeamMembershipBySlug(ctx, "acme", "security", "pat"); err != nil || m.GetState() != "pending" {
		t.Errorf("a pending invitation: %+v %v", m, err)
	}
	if _, resp, _ := gh.Teams.GetTeamMembershipBySlug(ctx, "other", "security", "olga"); resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("another organization's team: %v", resp)
	}

	perms := maps.Clone(DefaultPermissions())
	delete(perms, "members")
	s2, _ := newRecorded(t, WithAppPermissions(perms))
	inst2 := s2.AddInstallation("acme")
	s2.SetTeamMember("acme", "security", "sam", "active")
	_, resp, err := client(t, s2, inst2).Teams.GetTeamMembershipBySlug(ctx, "acme", "security", "sam")
	var ge *github.ErrorResponse
	if resp == nil || resp.StatusCode != http.StatusForbidden || !errors.As(err, &ge) {
		t.Errorf("without members:read: %v %v", resp, err)
	}
}
