package handlers

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestHandlersDoNotImportTheStore: the delivery and its outcome are the
// handlers' side of the port; the store implements it, never the reverse.
func TestHandlersDoNotImportTheStore(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatal(err, files)
	}
	for _, f := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasSuffix(path, "/app/store") || strings.Contains(path, "/app/store/") {
				t.Errorf("%s imports %s", f, path)
			}
		}
	}
}
