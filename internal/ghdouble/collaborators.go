package ghdouble

import (
	"net/http"
	"slices"
	"strings"
)

// roles are the repository roles, weakest first.
var roles = []string{"none", "read", "triage", "write", "maintain", "admin"}

// rolePermission maps a role to the coarse "permission" GitHub also reports,
// which only knows admin, write, read and none.
var rolePermission = map[string]string{
	"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read", "none": "none",
}

// SetPermission gives user the role on repo: "admin", "maintain", "write",
// "triage", "read", or "none" to take the role away (a public repository still
// lets everyone read, as on GitHub).
func (s *Server) SetPermission(repo, user, role string) {
	s.t.Helper()
	if !slices.Contains(roles, role) {
		s.t.Fatalf("ghdouble: SetPermission(%q, %q, %q): role must be one of %v", repo, user, role, roles)
	}
	r := s.mustRepo(repo)
	s.ensureUser(user, "User")
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.customRoles, strings.ToLower(user))
	if role == "none" {
		delete(r.permissions, strings.ToLower(user))
		return
	}
	r.permissions[strings.ToLower(user)] = role
}

// SetCustomRole gives user an organisation's custom role on repo: name is
// what GitHub reports as role_name, base the role it inherits ("read",
// "triage", "write" or "maintain", as GitHub allows), which decides what
// the user may do and the legacy permission reported.
func (s *Server) SetCustomRole(repo, user, name, base string) {
	s.t.Helper()
	if !slices.Contains([]string{"read", "triage", "write", "maintain"}, base) || name == "" || slices.Contains(roles, name) {
		s.t.Fatalf("ghdouble: SetCustomRole(%q, %q, %q, %q): a custom role needs a name of its own and a base of read, triage, write or maintain", repo, user, name, base)
	}
	s.SetPermission(repo, user, base)
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.customRoles[strings.ToLower(user)] = name
}

// roleLocked is the user's role: the one set, admin for a person owning the
// repository, read on a public repository, none otherwise.
func roleLocked(r *Repo, u *User) string {
	if role := r.permissions[strings.ToLower(u.Login)]; role != "" {
		return role
	}
	if strings.EqualFold(u.Login, r.Owner) && u.Type == "User" {
		return "admin"
	}
	if !r.Private {
		return "read"
	}
	return "none"
}

func (s *Server) collaboratorRoutes() []Route {
	return []Route{
		{Method: "GET", Path: "/repos/{owner}/{repo}/collaborators/{username}/permission", Permission: "metadata:read", Handler: s.getPermission},
	}
}

func (s *Server) getPermission(c *Call) (int, any) {
	u := s.findUser(c.Param("username"))
	if u == nil {
		return notFound()
	}
	c.Repo.mu.Lock()
	role := roleLocked(c.Repo, u)
	roleName := role
	if custom := c.Repo.customRoles[strings.ToLower(u.Login)]; custom != "" {
		roleName = custom
	}
	c.Repo.mu.Unlock()
	level := slices.Index(roles, role)
	user := s.userJSON(u)
	user["role_name"] = roleName
	user["permissions"] = map[string]bool{
		"pull":     level >= slices.Index(roles, "read"),
		"triage":   level >= slices.Index(roles, "triage"),
		"push":     level >= slices.Index(roles, "write"),
		"maintain": level >= slices.Index(roles, "maintain"),
		"admin":    level >= slices.Index(roles, "admin"),
	}
	return http.StatusOK, map[string]any{
		"permission": rolePermission[role],
		"role_name":  roleName,
		"user":       user,
	}
}
