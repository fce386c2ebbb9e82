// Package configdoc lists the keys of a configuration type, read from its
// struct tags, for docs/configuration.md and for the lists of keys code
// checks against. Each field names its key with its yaml tag and says
// what it means with a doc tag; optional tags: default (when the value
// cannot show it: it depends on the machine or on another key), unit
// ("bytes"), key (what a map's keys are, e.g. "name") and type (when the
// key also takes another form). A struct tag cannot hold a backtick, so a
// doc writes code between single quotes, 'like.this', and becomes a code
// span in Markdown; an apostrophe inside a word (the plan's) stays one.
package configdoc

import (
	"cmp"
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Key is one key of a configuration, in the order its type declares it.
type Key struct {
	// Path is the dotted key: "<name>" stands for a map's key, "[]" for a
	// list's element ("agents.runtimes.<name>.type", "policy[].match").
	Path string
	Type string
	// Default is what a key left out takes, in Markdown: its value as
	// written in YAML in a code span, or the default tag's words; empty
	// when it has none.
	Default string
	Doc     string
	// Section is set for a key whose value is a mapping (or a list or map
	// of them) with keys of its own.
	Section bool
}

// Options are what the tags cannot say.
type Options struct {
	// Docs gives the meaning of keys declared by another module's types,
	// which carry no doc tag, by path.
	Docs map[string]string
	// Elems are the defaults of a list's elements or a map's values, by
	// their type: what an element's keys left out take.
	Elems []any
}

var durationType = reflect.TypeOf(time.Duration(0))

// Keys lists the keys of the configuration type of defaults, whose values
// are the defaults. A key with no doc, or no yaml name, is an error that
// names it, so that a new key cannot go undocumented.
func Keys(defaults any, opt Options) ([]Key, error) {
	w := walker{opt: opt, elems: map[reflect.Type]reflect.Value{}}
	for _, e := range opt.Elems {
		w.elems[reflect.TypeOf(e)] = reflect.ValueOf(e)
	}
	v := reflect.ValueOf(defaults)
	w.fields("", v.Type(), v)
	for p := range opt.Docs {
		if !w.seen[p] {
			w.problems = append(w.problems, p+": documented, but no such key")
		}
	}
	if len(w.problems) > 0 {
		sort.Strings(w.problems)
		return w.keys, errors.New("configdoc: " + strings.Join(w.problems, "; "))
	}
	return w.keys, nil
}

type walker struct {
	opt      Options
	elems    map[reflect.Type]reflect.Value
	keys     []Key
	problems []string
	seen     map[string]bool
}

// fields walks the fields of struct type t; v holds its defaults, or is
// invalid when there are none.
func (w *walker) fields(at string, t reflect.Type, v reflect.Value) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		path := join(at, name)
		if name == "" && slices.Contains(strings.Split(opts, ","), "inline") {
			if t := f.Type; t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && !isText(t.Elem()) {
				w.fields(at+"[]", t.Elem(), w.elems[t.Elem()])
			} else {
				w.problems = append(w.problems, join(at, f.Name)+": inline, but not a list of mappings")
			}
			continue
		}
		if name == "" {
			w.problems = append(w.problems, join(at, f.Name)+": no yaml name")
			continue
		}
		var fv reflect.Value
		if v.IsValid() {
			fv = v.Field(i)
		}
		w.key(path, f, fv)
	}
}

func (w *walker) key(path string, f reflect.StructField, v reflect.Value) {
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	w.seen[path] = true
	k := Key{Path: path, Doc: codeSpans(f.Tag.Get("doc"))}
	if k.Doc == "" {
		k.Doc = codeSpans(w.opt.Docs[path])
	}
	if k.Doc == "" {
		w.problems = append(w.problems, path+": no doc")
	}
	t := f.Type
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
		if v.IsValid() {
			v = v.Elem() // invalid when nil: no default
		}
	}
	placeholder := "<" + cmp.Or(f.Tag.Get("key"), "key") + ">"
	var walk func()
	switch {
	case t == durationType:
		k.Type = "duration"
	case isText(t):
		k.Type = "string"
	case t.Kind() == reflect.Struct:
		k.Type, k.Section = "mapping", true
		walk = func() { w.fields(path, t, v) }
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && !isText(t.Elem()):
		k.Type, k.Section = "list of mappings", true
		walk = func() { w.fields(path+"[]", t.Elem(), w.elems[t.Elem()]) }
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Struct && !isText(t.Elem()):
		k.Type, k.Section = "map: "+placeholder[1:len(placeholder)-1]+" → mapping", true
		walk = func() { w.fields(path+"."+placeholder, t.Elem(), w.elems[t.Elem()]) }
	case t.Kind() == reflect.Map:
		k.Type = "map: " + placeholder[1:len(placeholder)-1] + " → " + scalar(t.Elem())
	case t.Kind() == reflect.Slice:
		k.Type = "list of " + scalar(t.Elem()) + "s"
	default:
		k.Type = scalar(t)
	}
	if unit := f.Tag.Get("unit"); unit != "" {
		k.Type += " (" + unit + ")"
	}
	if typ := f.Tag.Get("type"); typ != "" {
		k.Type = typ
	}
	k.Default = codeSpans(f.Tag.Get("default"))
	if k.Default == "" && !k.Section && v.IsValid() {
		if d := format(v); d != "" {
			k.Default = "`" + d + "`"
			if f.Tag.Get("unit") == "bytes" && v.CanInt() {
				k.Default += bytes(v.Int())
			}
		}
	}
	w.keys = append(w.keys, k)
	if walk != nil {
		walk()
	}
}

var textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

// isText reports whether t is written as a string: it marshals as text.
func isText(t reflect.Type) bool {
	return t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)
}

func scalar(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.String || isText(t):
		return "string"
	case t.Kind() == reflect.Bool:
		return "boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "integer"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "number"
	}
	return t.String()
}

// format writes a default as YAML would take it; empty for no value.
func format(v reflect.Value) string {
	switch {
	case v.Type() == durationType:
		return Duration(time.Duration(v.Int()))
	case v.Kind() == reflect.String:
		return v.String()
	case v.Kind() == reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case v.Kind() >= reflect.Int && v.Kind() <= reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case v.Kind() == reflect.Float32 || v.Kind() == reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case v.Kind() == reflect.Slice && v.Len() > 0:
		items := make([]string, v.Len())
		for i := range items {
			items[i] = format(v.Index(i))
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	return ""
}

// Duration writes d as people write it in YAML: 30m, 2h, 1m30s, 720h.
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// bytes says a size in KiB, MiB or GiB when it is a whole number of them.
func bytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf(" (%d %s)", n/u.size, u.name)
		}
	}
	return ""
}

var quoted = regexp.MustCompile(`(^|[\s(\[{/])'([^'\s][^']*?)'([\s.,;:!?)\]}/]|$)`)

// codeSpans turns 'code' into a Markdown code span.
func codeSpans(s string) string {
	for {
		next := quoted.ReplaceAllString(s, "$1`$2`$3")
		if next == s {
			return s
		}
		s = next
	}
}

// Paths are the keys' paths, in order.
func Paths(keys []Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Path
	}
	return out
}

func join(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}
