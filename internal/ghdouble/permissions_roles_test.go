package ghdouble

import (
	"context"
	"testing"
)

// TestCollaboratorRoles: the permission endpoint answers as GitHub does, the
// role in role_name and the legacy permission beside it (maintain is write,
// triage is read), and a custom role by its own name over its base.
func TestCollaboratorRoles(t *testing.T) {
	f := newFixture(t)
	gh := client(t, f.s, f.inst)
	for _, c := range []struct{ role, permission string }{
		{"admin", "admin"}, {"maintain", "write"}, {"write", "write"}, {"triage", "read"}, {"read", "read"},
	} {
		f.s.SetPermission(f.repo, "alice", c.role)
		got, _, err := gh.Repositories.GetPermissionLevel(context.Background(), "acme", "widgets", "alice")
		if err != nil {
			t.Fatalf("%s: %v", c.role, err)
		}
		if got.GetRoleName() != c.role || got.GetPermission() != c.permission {
			t.Errorf("%s: role_name %q permission %q, want %q %q", c.role, got.GetRoleName(), got.GetPermission(), c.role, c.permission)
		}
	}
	f.s.SetCustomRole(f.repo, "alice", "security-reviewer", "triage")
	got, _, err := gh.Repositories.GetPermissionLevel(context.Background(), "acme", "widgets", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got.GetRoleName() != "security-reviewer" || got.GetPermission() != "read" || !got.GetUser().GetPermissions()["triage"] || got.GetUser().GetPermissions()["push"] {
		t.Errorf("custom role: role_name %q permission %q user permissions %v", got.GetRoleName(), got.GetPermission(), got.GetUser().GetPermissions())
	}
}
