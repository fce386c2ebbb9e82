package ghdouble

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Installation is the App installed on an account.
type Installation struct {
	ID          int64
	AppID       int64
	Account     string
	Permissions map[string]string
	Events      []string
	CreatedAt   time.Time
	SuspendedAt time.Time // zero while active
	SuspendedBy string
	Deleted     bool
}

// AddInstallation installs the current App on account (an organization unless the
// login is already known as a person, see AddUser) and returns the installation id.
func (s *Server) AddInstallation(account string) int64 {
	s.ensureUser(account, "Organization")
	s.mu.Lock()
	defer s.mu.Unlock()
	inst := &Installation{
		ID:          s.nextID(),
		AppID:       s.app.ID,
		Account:     account,
		Permissions: maps.Clone(s.app.Permissions),
		Events:      slices.Clone(s.app.Events),
		CreatedAt:   s.now().UTC().Truncate(time.Second),
	}
	s.installations[inst.ID] = inst
	return inst.ID
}

// SuspendInstallation suspends it: new tokens are refused with 403, and so are
// requests with the tokens it already has.
func (s *Server) SuspendInstallation(id int64) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	inst := s.installations[id]
	if inst == nil {
		s.t.Fatalf("ghdouble: SuspendInstallation(%d): no such installation", id)
		return
	}
	inst.SuspendedAt = s.now().UTC().Truncate(time.Second)
	inst.SuspendedBy = s.app.Owner
}

// DeleteInstallation uninstalls the App: the installation answers 404 and its
// tokens are revoked.
func (s *Server) DeleteInstallation(id int64) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	inst := s.installations[id]
	if inst == nil {
		s.t.Fatalf("ghdouble: DeleteInstallation(%d): no such installation", id)
		return
	}
	inst.Deleted = true
	for value, tok := range s.tokens {
		if tok.InstallationID == id {
			delete(s.tokens, value)
		}
	}
}

// liveInstallationLocked is the installation if it exists for the current App.
func (s *Server) liveInstallationLocked(id int64) *Installation {
	inst := s.installations[id]
	if inst == nil || inst.Deleted || inst.AppID != s.app.ID {
		return nil
	}
	return inst
}

func (s *Server) installationCount(appID int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, inst := range s.installations {
		if inst.AppID == appID && !inst.Deleted {
			n++
		}
	}
	return n
}

// installationJSON renders an installation; call without s.mu held.
func (s *Server) installationJSON(inst Installation, app App) map[string]any {
	account := s.findUser(inst.Account)
	api := s.apiBase()
	html := fmt.Sprintf("%sorganizations/%s/settings/installations/%d", s.WebURL(), inst.Account, inst.ID)
	if account.Type == "User" {
		html = fmt.Sprintf("%ssettings/installations/%d", s.WebURL(), inst.ID)
	}
	out := map[string]any{
		"id":                        inst.ID,
		"account":                   s.userJSON(account),
		"repository_selection":      "all",
		"access_tokens_url":         fmt.Sprintf("%s/app/installations/%d/access_tokens", api, inst.ID),
		"repositories_url":          api + "/installation/repositories",
		"html_url":                  html,
		"app_id":                    inst.AppID,
		"app_slug":                  app.Slug,
		"client_id":                 app.ClientID,
		"target_id":                 account.ID,
		"target_type":               account.Type,
		"permissions":               inst.Permissions,
		"events":                    inst.Events,
		"created_at":                timeJSON(inst.CreatedAt),
		"updated_at":                timeJSON(inst.CreatedAt),
		"single_file_name":          nil,
		"has_multiple_single_files": false,
		"single_file_paths":         []string{},
		"suspended_by":              nil,
		"suspended_at":              nil,
	}
	if !inst.SuspendedAt.IsZero() {
		out["suspended_by"] = s.loginJSON(inst.SuspendedBy)
		out["suspended_at"] = timeJSON(inst.SuspendedAt)
	}
	return out
}

// installation copies the live installation id with its App.
func (s *Server) installation(id int64) (Installation, App, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inst := s.liveInstallationLocked(id)
	if inst == nil {
		return Installation{}, App{}, false
	}
	return *inst, *s.app, true
}

func (s *Server) getInstallation(c *Call) (int, any) {
	inst, app, ok := s.installation(c.IntParam("installation_id"))
	if !ok {
		return notFound()
	}
	return 200, s.installationJSON(inst, app)
}

func (s *Server) listInstallations(c *Call) (int, any) {
	s.mu.Lock()
	var ids []int64
	for id := range s.installations {
		if s.liveInstallationLocked(id) != nil {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	slices.Sort(ids)
	out := []any{}
	for _, id := range paginate(c, ids) {
		if inst, app, ok := s.installation(id); ok {
			out = append(out, s.installationJSON(inst, app))
		}
	}
	return 200, out
}

func (s *Server) getRepoInstallation(c *Call) (int, any) {
	inst, app, ok := s.installation(c.Repo.InstallationID)
	if !ok {
		return notFound()
	}
	return 200, s.installationJSON(inst, app)
}
