package templates_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// eventRe finds the events a template branches on.
var eventRe = regexp.MustCompile(`eq \.Event "([^"]+)"`)

// templateEvents maps each text template that branches on .Event to the
// events it lists.
func templateEvents(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	files, err := filepath.Glob("text/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range eventRe.FindAllStringSubmatch(string(b), -1) {
			name := strings.TrimSuffix(filepath.Base(f), ".md")
			if out[name] == nil {
				out[name] = map[string]bool{}
			}
			out[name][m[1]] = true
		}
	}
	return out
}

// TestEventsCovered: an event template (a check run's title, a progress
// line, a reason) falls back to printing the bare event, so an event the
// pipeline raises that its template does not list would reach GitHub as
// "check-faild". Every event the pipeline's code names in a literal must
// be listed by its template, and every listed event has a snapshot case.
func TestEventsCovered(t *testing.T) {
	listed := templateEvents(t)
	if len(listed) < 4 {
		t.Fatalf("found the events of %d templates, want at least 4 (check-title, check-summary, progress-line, reason)", len(listed))
	}

	// The snapshot cases: each listed event is rendered, and no case
	// renders an event its template does not list.
	typeTemplate := map[string]string{}
	cased := map[string]map[string]bool{}
	for _, tc := range textCases(t) {
		v := reflect.Indirect(reflect.ValueOf(tc.data))
		typeTemplate[v.Type().Name()] = tc.data.Template()
		if v.Kind() != reflect.Struct {
			continue
		}
		ev := v.FieldByName("Event")
		if !ev.IsValid() || ev.Kind() != reflect.String {
			continue
		}
		name := tc.data.Template()
		if !listed[name][ev.String()] {
			t.Errorf("case %s renders event %q, which text/%s.md does not list", tc.name, ev.String(), name)
		}
		if cased[name] == nil {
			cased[name] = map[string]bool{}
		}
		cased[name][ev.String()] = true
	}
	for name, events := range listed {
		for _, ev := range sorted(events) {
			if !cased[name][ev] {
				t.Errorf("text/%s.md lists event %q and no snapshot case renders it", name, ev)
			}
		}
	}

	// The pipeline's code: templates.X{Event: "..."} literals.
	seen := 0
	fset := token.NewFileSet()
	err := filepath.WalkDir("../pipeline", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		file, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			sel, ok := lit.Type.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "templates" {
				return true
			}
			for _, el := range lit.Elts {
				kv, ok := el.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, ok := kv.Key.(*ast.Ident)
				if !ok || key.Name != "Event" {
					continue
				}
				bl, ok := kv.Value.(*ast.BasicLit)
				if !ok || bl.Kind != token.STRING {
					continue
				}
				ev, _ := strconv.Unquote(bl.Value)
				name, ok := typeTemplate[sel.Sel.Name]
				if !ok {
					t.Errorf("%s: templates.%s has no snapshot case", fset.Position(bl.Pos()), sel.Sel.Name)
					continue
				}
				seen++
				if !listed[name][ev] {
					t.Errorf("%s: event %q of templates.%s is not listed by text/%s.md", fset.Position(bl.Pos()), ev, sel.Sel.Name, name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 20 {
		t.Errorf("found %d event literals in the pipeline, want the pipeline's many (did the walk miss it?)", seen)
	}
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
