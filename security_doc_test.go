package forge

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSecurityDocNamesRealTests keeps SECURITY.md true to the code: every
// test it names as holding a claim exists, so a claim cannot outlive the
// test that held it by a rename or a removal.
func TestSecurityDocNamesRealTests(t *testing.T) {
	doc, err := os.ReadFile("SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1) {
		named[m[1]] = false
	}
	if len(named) < 20 {
		t.Fatalf("SECURITY.md names %d tests; it should name the tests that hold each claim", len(named))
	}
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			if _, ok := named[m[1]]; ok {
				named[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, found := range named {
		if !found {
			t.Errorf("SECURITY.md names %s, which no test file declares", name)
		}
	}
}
