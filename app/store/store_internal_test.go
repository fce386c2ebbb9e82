package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		url         string
		wantDialect string
		wantTarget  string
		wantErr     bool
	}{
		{url: "./data/forge.db", wantDialect: DialectSQLite, wantTarget: "./data/forge.db"},
		{url: "forge.db", wantDialect: DialectSQLite, wantTarget: "forge.db"},
		{url: "/var/lib/forge/forge.db", wantDialect: DialectSQLite, wantTarget: "/var/lib/forge/forge.db"},
		{url: "sqlite://data/forge.db", wantDialect: DialectSQLite, wantTarget: "data/forge.db"},
		{url: "sqlite:///var/lib/forge/forge.db", wantDialect: DialectSQLite, wantTarget: "/var/lib/forge/forge.db"},
		{url: "  sqlite://forge.db \n", wantDialect: DialectSQLite, wantTarget: "forge.db"},
		{url: "postgres://u:p@db:5432/forge?sslmode=disable", wantDialect: DialectPostgres, wantTarget: "postgres://u:p@db:5432/forge?sslmode=disable"},
		{url: "postgresql://db/forge", wantDialect: DialectPostgres, wantTarget: "postgresql://db/forge"},
		{url: "", wantErr: true},
		{url: "sqlite://", wantErr: true},
		{url: "mysql://db/forge", wantErr: true},
		{url: "sqlite://forge.db?mode=ro", wantErr: true},
		{url: "forge.db#x", wantErr: true},
		{url: "postgres://db:port/forge", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			dialect, target, err := parseURL(tt.url)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseURL(%q) = %q, %q; want an error", tt.url, dialect, target)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseURL(%q): %v", tt.url, err)
			}
			if dialect != tt.wantDialect || target != tt.wantTarget {
				t.Errorf("parseURL(%q) = %q, %q; want %q, %q", tt.url, dialect, target, tt.wantDialect, tt.wantTarget)
			}
		})
	}
}

// Every dialect must define the same versions under the same names, or a
// table would exist on one backend only.
func TestMigrationsMatchAcrossDialects(t *testing.T) {
	sqlite, err := migrations(DialectSQLite)
	if err != nil {
		t.Fatal(err)
	}
	postgres, err := migrations(DialectPostgres)
	if err != nil {
		t.Fatal(err)
	}
	if len(sqlite) == 0 {
		t.Fatal("no migrations embedded")
	}
	if len(sqlite) != len(postgres) {
		t.Fatalf("sqlite has %d migrations, postgres %d", len(sqlite), len(postgres))
	}
	for i := range sqlite {
		if sqlite[i].version != postgres[i].version || sqlite[i].name != postgres[i].name {
			t.Errorf("migration %d: sqlite %04d_%s, postgres %04d_%s", i,
				sqlite[i].version, sqlite[i].name, postgres[i].version, postgres[i].name)
		}
	}
}

// TestClaimServe: a second server on one SQLite file is refused, saying
// why and who has it; the claim ends with the store.
func TestClaimServe(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "forge.db")
	first, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.ClaimServe(); err != nil {
		t.Fatalf("first claim: %v", err)
	}
	second, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	err = second.ClaimServe()
	if !errors.Is(err, ErrServedElsewhere) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Fatalf("second claim: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := second.ClaimServe(); err != nil {
		t.Errorf("a claim after the first server closed: %v", err)
	}
}
