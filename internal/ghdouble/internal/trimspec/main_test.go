package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/ghdouble"
)

// TestTrimmedSpecIsCurrent fails when a route was added without `go generate
// ./internal/ghdouble`, or the trimming changed without regenerating.
func TestTrimmedSpecIsCurrent(t *testing.T) {
	full := filepath.Join("..", "..", "..", "..", "..", "shared", "github", "openapi", "api.github.com.json")
	data, err := os.ReadFile(full)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("GitHub's full description is not beside the repository (%s)", full)
	}
	if err != nil {
		t.Fatal(err)
	}
	want, err := trim(data, ghdouble.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", "openapi", "api.github.com.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Error("testdata/openapi/api.github.com.json is stale: run `go generate ./internal/ghdouble`")
	}
	if len(have) > 1_500_000 {
		t.Errorf("the trimmed description is %d bytes; keep it under 1.5 MB", len(have))
	}
}

const tinySpec = `{
 "openapi": "3.0.3",
 "info": {"title": "t", "version": "1"},
 "servers": [{"url": "https://api.github.com"}],
 "tags": [{"name": "dropped"}],
 "paths": {
  "/things/{id}": {
   "parameters": [{"$ref": "#/components/parameters/id"}],
   "get": {"responses": {"200": {"description": "ok", "content": {"application/json": {
     "schema": {"$ref": "#/components/schemas/thing"},
     "examples": {"default": {"$ref": "#/components/examples/thing"}}}}}}},
   "delete": {"responses": {"204": {"description": "gone"}}}
  },
  "/other": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/unused"}}}}}}}
 },
 "components": {
  "parameters": {"id": {"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}, "example": 1}},
  "schemas": {
   "thing": {"type": "object", "properties": {"owner": {"$ref": "#/components/schemas/user"}, "example": {"type": "string"}}, "example": {"owner": null}},
   "user": {"type": "object", "properties": {"login": {"type": "string"}}},
   "unused": {"type": "string"}
  },
  "examples": {"thing": {"value": {}}}
 }
}`

func TestTrimKeepsWhatIsReferenced(t *testing.T) {
	out, err := trim([]byte(tinySpec), []string{"GET /things/{id}"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	paths := got["paths"].(map[string]any)
	item := paths["/things/{id}"].(map[string]any)
	if len(paths) != 1 || item["delete"] != nil || item["parameters"] == nil {
		t.Errorf("paths = %v: want only GET /things/{id} with its path parameters", paths)
	}
	components := got["components"].(map[string]any)
	var names []string
	for kind, section := range components {
		for name := range section.(map[string]any) {
			names = append(names, kind+"/"+name)
		}
	}
	if want := []string{"parameters/id", "schemas/thing", "schemas/user"}; !sameSet(names, want) {
		t.Errorf("components = %v, want %v", names, want)
	}
	thing := components["schemas"].(map[string]any)["thing"].(map[string]any)
	if _, ok := thing["example"]; ok {
		t.Error("the schema's example keyword was kept")
	}
	if _, ok := thing["properties"].(map[string]any)["example"]; !ok {
		t.Error("a property named example was dropped")
	}
	if strings.Contains(string(out), "examples") || got["tags"] != nil {
		t.Errorf("examples or tags kept: %s", out)
	}
}

func TestTrimRefusesUnknownEndpoints(t *testing.T) {
	if _, err := trim([]byte(tinySpec), []string{"POST /things/{id}"}); err == nil || !strings.Contains(err.Error(), "POST /things/{id}") {
		t.Errorf("err = %v, want the missing endpoint named", err)
	}
}

func TestPatchesApplyToGitHubsDescription(t *testing.T) {
	spec := `{"openapi": "3.0.3", "info": {}, "paths": {"/repos/{owner}/{repo}/issues/{issue_number}/labels": {"post": {
		"requestBody": {"content": {"application/json": {"schema": {"oneOf": [{"type": "object"}]}}}}, "responses": {}}}}, "components": {}}`
	out, err := trim([]byte(spec), []string{"POST /repos/{owner}/{repo}/issues/{issue_number}/labels"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal(out, &got)
	oneOf := dig(got, "paths", "/repos/{owner}/{repo}/issues/{issue_number}/labels", "post", "requestBody", "content", "application/json", "schema", "oneOf")
	if list, _ := oneOf.([]any); len(list) != 3 {
		t.Errorf("oneOf = %v, want the bare arrays added", oneOf)
	}
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

func sameSet(a, b []string) bool {
	set := func(xs []string) map[string]bool {
		m := map[string]bool{}
		for _, x := range xs {
			m[x] = true
		}
		return m
	}
	return reflect.DeepEqual(set(a), set(b))
}
