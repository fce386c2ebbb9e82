package repoconfig

import (
	"errors"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestEveryKeyIsDocumented: every key of .github/forge.yml has a doc tag,
// so docs/configuration.md cannot leave a new one out.
func TestEveryKeyIsDocumented(t *testing.T) {
	if _, err := Keys(); err != nil {
		t.Error(err)
	}
}

var knownKeysRe = regexp.MustCompile(`known keys here: (.*)\)`)

// TestKeysAreTheParsers: at every level of the file, the keys Config's
// yaml tags name are the keys the parser knows (its answer to an unknown
// key lists them), so the documentation names no key the parser refuses
// and leaves out none it takes.
func TestKeysAreTheParsers(t *testing.T) {
	keys, _ := Keys()
	children := map[string][]string{"": nil}
	for _, k := range keys {
		parent, name := "", k.Path
		if i := strings.LastIndex(k.Path, "."); i >= 0 {
			parent, name = k.Path[:i], k.Path[i+1:]
		}
		children[parent] = append(children[parent], name)
	}
	for section, want := range children {
		// A mapping with one unknown key, at the section's place: a
		// "<name>" there is a name of the file's choosing, a "[]" the
		// first element of a list.
		var doc any = map[string]any{"zz_unknown": 1}
		if section != "" {
			parts := strings.Split(section, ".")
			for i := len(parts) - 1; i >= 0; i-- {
				part := parts[i]
				if p, ok := strings.CutSuffix(part, "[]"); ok {
					part, doc = p, []any{doc}
				}
				if strings.HasPrefix(part, "<") {
					part = "x"
				}
				doc = map[string]any{part: doc}
			}
		}
		data, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Parse(data)
		var ce *Error
		if !errors.As(err, &ce) || len(ce.Problems) != 1 {
			t.Errorf("%q: %v", section, err)
			continue
		}
		m := knownKeysRe.FindStringSubmatch(ce.Problems[0].Message)
		if m == nil {
			t.Errorf("%q: %s", section, ce.Problems[0].Message)
			continue
		}
		got := strings.Split(m[1], ", ")
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("under %q the parser knows %v, the yaml tags name %v", section, got, want)
		}
	}
}

// TestKeysNameTheirFields: a file setting one key, to its value in the
// full example file, changes the field that key's yaml tag names and no
// other, so each key's documented type and default are its own. The
// example sets every key away from its default but version, of which
// there is one, and the roles' keys, which share one type.
func TestKeysNameTheirFields(t *testing.T) {
	full, err := os.ReadFile("testdata/forge.yml")
	if err != nil {
		t.Fatal(err)
	}
	var example map[string]any
	if err := yaml.Unmarshal(full, &example); err != nil {
		t.Fatal(err)
	}
	keys, _ := Keys()
	def := reflect.ValueOf(Default())
	for _, k := range keys {
		// The keys of a map's values (a pipeline's steps) are held to
		// their fields by the pipelines' own tests.
		if k.Section || k.Path == "version" || strings.Contains(k.Path, "<") {
			continue
		}
		value, ok := valueAt(example, k.Path)
		if !ok {
			if !strings.HasPrefix(k.Path, "agents.") || k.Path == "agents.timeout" {
				t.Errorf("testdata/forge.yml does not set %s", k.Path)
			}
			continue
		}
		one := value
		parts := strings.Split(k.Path, ".")
		for i := len(parts) - 1; i >= 0; i-- {
			one = map[string]any{parts[i]: one}
		}
		data, err := yaml.Marshal(one)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := Parse(data)
		if err != nil {
			t.Errorf("%s: %v", k.Path, err)
			continue
		}
		for _, other := range keys {
			if other.Section || strings.Contains(other.Path, "<") {
				continue
			}
			changed := !reflect.DeepEqual(fieldAt(t, reflect.ValueOf(cfg), other.Path).Interface(), fieldAt(t, def, other.Path).Interface())
			if changed != (other.Path == k.Path) {
				t.Errorf("setting %s changed %s: %v", k.Path, other.Path, changed)
			}
		}
	}
}

// valueAt is the value at a dotted path of a decoded YAML mapping.
func valueAt(m map[string]any, path string) (any, bool) {
	var v any = m
	for _, name := range strings.Split(path, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = mm[name]; !ok {
			return nil, false
		}
	}
	return v, true
}

// fieldAt is the field of v at a dotted path of yaml names.
func fieldAt(t *testing.T, v reflect.Value, path string) reflect.Value {
	t.Helper()
	for _, name := range strings.Split(path, ".") {
		found := false
		for i := range v.NumField() {
			if yaml, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ","); yaml == name {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			t.Fatalf("no field for %s", path)
		}
	}
	return v
}
