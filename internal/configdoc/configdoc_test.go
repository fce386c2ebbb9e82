package configdoc

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

type foreign struct {
	URL string `yaml:"url"`
}

type runtime struct {
	Type  string `yaml:"type" doc:"exec or openai" default:"required"`
	Turns int    `yaml:"turns" doc:"the turn cap"`
}

type rule struct {
	Match string `yaml:"match" doc:"the pattern"`
	Floor *struct {
		Min int `yaml:"min" doc:"the least"`
	} `yaml:"floor" doc:"a floor"`
	Auto *bool `yaml:"auto" doc:"may turn it on"`
}

type sample struct {
	Server struct {
		Port    int           `yaml:"port" doc:"the port"`
		Grace   time.Duration `yaml:"grace" doc:"the grace"`
		Body    int64         `yaml:"body" unit:"bytes" doc:"the largest body"`
		Checks  []string      `yaml:"checks" doc:"the checks"`
		Ignored func()        `yaml:"-"`
	} `yaml:"server" doc:"the listener"`
	GitHub   foreign            `yaml:"github"`
	Runtimes map[string]runtime `yaml:"runtimes" key:"name" doc:"the runtimes"`
	Roles    map[string]string  `yaml:"roles" key:"role" doc:"runtime per role"`
	Policy   []rule             `yaml:"policy" doc:"the rules"`
	Dir      string             `yaml:"dir" default:"'x' in $TMPDIR" doc:"where"`
	hidden   int
}

func TestKeys(t *testing.T) {
	var s sample
	s.Server.Port, s.Server.Grace, s.Server.Body, s.Server.Checks = 8080, 90*time.Second, 8<<20, []string{"build", "test"}
	no := false
	keys, err := Keys(s, Options{
		Docs:  map[string]string{"github": "GitHub", "github.url": "its URL"},
		Elems: []any{runtime{Turns: 50}, rule{Auto: &no}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.hidden
	want := []Key{
		{Path: "server", Type: "mapping", Doc: "the listener", Section: true},
		{Path: "server.port", Type: "integer", Default: "`8080`", Doc: "the port"},
		{Path: "server.grace", Type: "duration", Default: "`1m30s`", Doc: "the grace"},
		{Path: "server.body", Type: "integer (bytes)", Default: "`8388608` (8 MiB)", Doc: "the largest body"},
		{Path: "server.checks", Type: "list of strings", Default: "`[build, test]`", Doc: "the checks"},
		{Path: "github", Type: "mapping", Doc: "GitHub", Section: true},
		{Path: "github.url", Type: "string", Doc: "its URL"},
		{Path: "runtimes", Type: "map: name → mapping", Doc: "the runtimes", Section: true},
		{Path: "runtimes.<name>.type", Type: "string", Default: "required", Doc: "exec or openai"},
		{Path: "runtimes.<name>.turns", Type: "integer", Default: "`50`", Doc: "the turn cap"},
		{Path: "roles", Type: "map: role → string", Doc: "runtime per role"},
		{Path: "policy", Type: "list of mappings", Doc: "the rules", Section: true},
		{Path: "policy[].match", Type: "string", Doc: "the pattern"},
		{Path: "policy[].floor", Type: "mapping", Doc: "a floor", Section: true},
		{Path: "policy[].floor.min", Type: "integer", Doc: "the least"},
		{Path: "policy[].auto", Type: "boolean", Default: "`false`", Doc: "may turn it on"},
		{Path: "dir", Type: "string", Default: "`x` in $TMPDIR", Doc: "where"},
	}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("keys:\n%+v\nwant\n%+v", keys, want)
	}
}

// TestKeysWithoutDoc: a key without a doc, one without a yaml name and a
// doc for a key that does not exist are each named in the error.
func TestKeysWithoutDoc(t *testing.T) {
	type bad struct {
		Documented int `yaml:"documented" doc:"yes"`
		Silent     int `yaml:"silent"`
		Unnamed    int `doc:"no yaml name"`
	}
	_, err := Keys(bad{}, Options{Docs: map[string]string{"gone": "a key that was removed"}})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"silent: no doc", "Unnamed: no yaml name", "gone: documented, but no such key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "documented: no doc") {
		t.Errorf("error %q names a documented key", err)
	}
}

func TestMarkdown(t *testing.T) {
	keys := []Key{
		{Path: "server", Type: "mapping", Doc: "the listener", Section: true},
		{Path: "server.port", Type: "integer", Default: "`8080`", Doc: "the port | a number"},
		{Path: "dir", Type: "string", Doc: "where"},
	}
	got := Markdown(keys, "###", map[string]string{"server.port": "FORGE_PORT"})
	want := "### `server`\n\nthe listener\n\n| key | type | default | environment | meaning |\n|---|---|---|---|---|\n" +
		"| `server.port` | integer | `8080` | `FORGE_PORT` | the port \\| a number |\n\n" +
		"### `dir`\n\n| key | type | default | environment | meaning |\n|---|---|---|---|---|\n| `dir` | string | none |  | where |\n\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := Markdown(keys[2:], "##", nil); !strings.Contains(got, "| key | type | default | meaning |\n") {
		t.Errorf("without env:\n%s", got)
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{30 * time.Minute: "30m", 2 * time.Hour: "2h", 720 * time.Hour: "720h",
		90 * time.Second: "1m30s", 3 * time.Second: "3s", 90 * time.Minute: "1h30m", 0: "0s"} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestCodeSpans(t *testing.T) {
	for in, want := range map[string]string{
		"set 'a.b' and 'c'.":               "set `a.b` and `c`.",
		"'x' 'y'":                          "`x` `y`",
		"the plan's file and the people's": "the plan's file and the people's",
		"('{runtime: NAME}')":              "(`{runtime: NAME}`)",
		"the plans' branches, 'k'":         "the plans' branches, `k`",
	} {
		if got := codeSpans(in); got != want {
			t.Errorf("codeSpans(%q) = %q, want %q", in, got, want)
		}
	}
}

// word marshals as text: a key of its type is a string.
type word struct{ s string }

func (w word) MarshalText() ([]byte, error) { return []byte(w.s), nil }

// TestKeysInlineAndText: a map whose values hold an inline list of
// mappings documents the elements' keys under "<name>[]", and a type that
// marshals as text is a string, alone or in a list.
func TestKeysInlineAndText(t *testing.T) {
	type step struct {
		Role  string `yaml:"role" doc:"the role"`
		Gates []word `yaml:"gates" doc:"the gates"`
		Line  int    `yaml:"-"`
	}
	type pipeline struct {
		Name  string `yaml:"-"`
		Steps []step `yaml:",inline"`
	}
	type config struct {
		Pipelines map[string]pipeline `yaml:"pipelines" key:"name" type:"map: name → list of steps" doc:"the pipelines"`
		Gate      word                `yaml:"gate" doc:"one gate"`
	}
	keys, err := Keys(config{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Key{
		{Path: "pipelines", Type: "map: name → list of steps", Doc: "the pipelines", Section: true},
		{Path: "pipelines.<name>[].role", Type: "string", Doc: "the role"},
		{Path: "pipelines.<name>[].gates", Type: "list of strings", Doc: "the gates"},
		{Path: "gate", Type: "string", Doc: "one gate"},
	}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("keys:\n%+v\nwant\n%+v", keys, want)
	}

	type badInline struct {
		Inline int `yaml:",inline"`
	}
	if _, err := Keys(badInline{}, Options{}); err == nil || !strings.Contains(err.Error(), "Inline: inline, but not a list of mappings") {
		t.Errorf("an inline int: %v", err)
	}
}
