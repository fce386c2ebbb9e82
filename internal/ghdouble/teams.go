package ghdouble

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// Team is a team of an organization, by its slug; a child team's members
// are members of its parent too, as GitHub counts them.
type Team struct {
	ID     int64
	Org    string
	Slug   string
	Parent string // the parent team's slug, empty for none
	// members maps a lower-cased login to its membership's state
	// (active, pending) and role (member, maintainer).
	members map[string]teamMember
}

type teamMember struct{ state, role string }

// teamTable is a leaf lock: nothing else is taken while it is held.
type teamTable struct {
	mu     sync.Mutex
	byName map[string]*Team // by lower-cased "org/slug"
}

// AddTeam makes the team org/slug, under the team parent (a slug of the
// same organization, "" for none), if it is not there yet.
func (s *Server) AddTeam(org, slug, parent string) {
	s.t.Helper()
	s.ensureUser(org, "Organization")
	s.teams.mu.Lock()
	defer s.teams.mu.Unlock()
	if parent != "" && s.teams.byName[strings.ToLower(org+"/"+parent)] == nil {
		s.t.Fatalf("ghdouble: AddTeam(%q, %q, %q): no parent team %s/%s", org, slug, parent, org, parent)
		return
	}
	if s.teams.byName == nil {
		s.teams.byName = map[string]*Team{}
	}
	key := strings.ToLower(org + "/" + slug)
	if s.teams.byName[key] == nil {
		s.teams.byName[key] = &Team{ID: s.nextID(), Org: org, Slug: slug, Parent: parent, members: map[string]teamMember{}}
	}
}

// SetTeamMember gives user a membership of the team org/slug (made if
// needed) in state "active", or "pending" (invited, not accepted yet), or
// takes it away with "none".
func (s *Server) SetTeamMember(org, slug, user, state string) {
	s.t.Helper()
	switch state {
	case "active", "pending", "none":
	default:
		s.t.Fatalf("ghdouble: SetTeamMember(%q, %q, %q, %q): state must be active, pending or none", org, slug, user, state)
		return
	}
	s.AddTeam(org, slug, "")
	s.ensureUser(user, "User")
	s.teams.mu.Lock()
	defer s.teams.mu.Unlock()
	team := s.teams.byName[strings.ToLower(org+"/"+slug)]
	if state == "none" {
		delete(team.members, strings.ToLower(user))
		return
	}
	team.members[strings.ToLower(user)] = teamMember{state: state, role: "member"}
}

func (s *Server) teamRoutes() []Route {
	return []Route{
		{Method: "GET", Path: "/orgs/{org}/teams/{team_slug}/memberships/{username}", Permission: "members:read", Handler: s.getTeamMembership},
	}
}

// getTeamMembership answers a person's membership of a team, counting the
// members of its child teams (an active membership of a child team
// before a pending one). An installation sees only its own
// organization's teams: any other, a team that does not exist and a
// person who is no member all answer 404, as on GitHub.
func (s *Server) getTeamMembership(c *Call) (int, any) {
	org, slug, login := c.Param("org"), c.Param("team_slug"), c.Param("username")
	s.mu.Lock()
	inst := s.installations[c.Token.InstallationID]
	account := ""
	if inst != nil {
		account = inst.Account
	}
	s.mu.Unlock()
	if !strings.EqualFold(account, org) {
		return notFound()
	}
	found, teamID := s.membership(org, slug, login)
	if found == nil {
		return notFound()
	}
	orgID := s.ensureUser(org, "Organization").ID
	return http.StatusOK, map[string]any{
		"url":   fmt.Sprintf("%s/organizations/%d/team/%d/memberships/%s", s.apiBase(), orgID, teamID, url.PathEscape(login)),
		"role":  found.role,
		"state": found.state,
	}
}

// membership is login's membership of the team org/slug or of one of its
// child teams, an active one first, and the team's id; nil when none.
func (s *Server) membership(org, slug, login string) (*teamMember, int64) {
	s.teams.mu.Lock()
	defer s.teams.mu.Unlock()
	team := s.teams.byName[strings.ToLower(org+"/"+slug)]
	if team == nil {
		return nil, 0
	}
	var found *teamMember
	for _, t := range s.teams.byName {
		if !strings.EqualFold(t.Org, team.Org) || !s.descendsLocked(t, team) {
			continue
		}
		if m, ok := t.members[strings.ToLower(login)]; ok && (found == nil || found.state != "active") {
			found = &m
		}
	}
	return found, team.ID
}

// descendsLocked reports whether t is team or one of its child teams, at
// any depth.
func (s *Server) descendsLocked(t, team *Team) bool {
	for seen := 0; t != nil && seen <= len(s.teams.byName); seen++ {
		if t == team {
			return true
		}
		if t.Parent == "" {
			return false
		}
		t = s.teams.byName[strings.ToLower(t.Org+"/"+t.Parent)]
	}
	return false
}
