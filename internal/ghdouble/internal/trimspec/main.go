// Command trimspec cuts GitHub's OpenAPI description (13 MB) down to the
// operations the GitHub double serves (ghdouble.Endpoints) and the components they
// reference, so the double can validate requests against a file small enough to
// keep in the repository and load in every test. Examples are dropped; GitHub's
// LICENSE is copied beside the output.
//
//	go run ./internal/trimspec -in ../../../shared/github/openapi/api.github.com.json -out ../../testdata/openapi/api.github.com.json
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/forge-dev/forge/internal/ghdouble"
)

func main() {
	in := flag.String("in", "", "GitHub's full OpenAPI description (api.github.com.json)")
	out := flag.String("out", "", "where to write the trimmed description")
	flag.Parse()
	if *in == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*in, *out, ghdouble.Endpoints()); err != nil {
		fmt.Fprintln(os.Stderr, "trimspec:", err)
		os.Exit(1)
	}
}

func run(in, out string, endpoints []string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("read description: %w", err)
	}
	trimmed, err := trim(data, endpoints)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("create output folder: %w", err)
	}
	if err := os.WriteFile(out, trimmed, 0o644); err != nil {
		return fmt.Errorf("write trimmed description: %w", err)
	}
	license, err := os.ReadFile(filepath.Join(filepath.Dir(in), "LICENSE"))
	if err != nil {
		return fmt.Errorf("read GitHub's LICENSE beside the description: %w", err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(out), "LICENSE"), license, 0o644); err != nil {
		return fmt.Errorf("copy LICENSE: %w", err)
	}
	return nil
}

// trim keeps the operations named "METHOD /path" with their path-level
// parameters, and every component reachable from them.
func trim(data []byte, endpoints []string) ([]byte, error) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decode description: %w", err)
	}
	allPaths, _ := doc["paths"].(map[string]any)
	paths := map[string]any{}
	var missing []string
	for _, endpoint := range endpoints {
		method, path, _ := strings.Cut(endpoint, " ")
		method = strings.ToLower(method)
		item, _ := allPaths[path].(map[string]any)
		op, ok := item[method]
		if !ok {
			missing = append(missing, endpoint)
			continue
		}
		kept, ok := paths[path].(map[string]any)
		if !ok {
			kept = map[string]any{}
			if params, ok := item["parameters"]; ok {
				kept["parameters"] = params
			}
			paths[path] = kept
		}
		kept[method] = op
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("not in GitHub's description: %s", strings.Join(missing, ", "))
	}
	if err := applyPatches(paths); err != nil {
		return nil, err
	}
	stripExamples(paths)

	components, _ := doc["components"].(map[string]any)
	kept := map[string]map[string]any{}
	queue := collectRefs(paths, nil)
	seen := map[string]bool{}
	for len(queue) > 0 {
		ref := queue[0]
		queue = queue[1:]
		if seen[ref] {
			continue
		}
		seen[ref] = true
		kind, name, err := splitRef(ref)
		if err != nil {
			return nil, err
		}
		section, _ := components[kind].(map[string]any)
		value, ok := section[name]
		if !ok {
			return nil, fmt.Errorf("dangling reference %s", ref)
		}
		stripExamples(value)
		if kept[kind] == nil {
			kept[kind] = map[string]any{}
		}
		kept[kind][name] = value
		queue = collectRefs(value, queue)
	}

	info, _ := doc["info"].(map[string]any)
	info["description"] = "GitHub's OpenAPI description trimmed by internal/ghdouble/internal/trimspec to the operations the GitHub double serves. Regenerate with `go generate ./internal/ghdouble`."
	outDoc := map[string]any{
		"openapi":    doc["openapi"],
		"info":       info,
		"servers":    doc["servers"],
		"paths":      paths,
		"components": kept,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(outDoc); err != nil {
		return nil, fmt.Errorf("encode trimmed description: %w", err)
	}
	return buf.Bytes(), nil
}

// patch widens an operation where GitHub accepts more than its description says
// and the clients Forge uses rely on it; without it the double would refuse
// requests GitHub serves.
type patch struct {
	endpoint string
	why      string
	apply    func(op map[string]any) error
}

var patches = []patch{
	{
		endpoint: "POST /repos/{owner}/{repo}/issues/{issue_number}/labels",
		why:      "the labels may be a bare array, as the description's own text says; go-github sends one",
		apply:    acceptBareLabelArray,
	},
	{
		endpoint: "PUT /repos/{owner}/{repo}/issues/{issue_number}/labels",
		why:      "the labels may be a bare array, as the description's own text says; go-github sends one",
		apply:    acceptBareLabelArray,
	},
	{
		endpoint: "GET /app/installations",
		why:      "an installation's account is a user or an enterprise, as GET /app/installations/{installation_id} says (anyOf); the list's allOf of both matches no account",
		apply:    installationAccountAnyOf,
	},
}

// applyPatches applies the patches of the operations that were kept.
func applyPatches(paths map[string]any) error {
	for _, p := range patches {
		method, path, _ := strings.Cut(p.endpoint, " ")
		item, _ := paths[path].(map[string]any)
		op, ok := item[strings.ToLower(method)].(map[string]any)
		if !ok {
			continue
		}
		if err := p.apply(op); err != nil {
			return fmt.Errorf("patch %s (%s): %w", p.endpoint, p.why, err)
		}
	}
	return nil
}

func acceptBareLabelArray(op map[string]any) error {
	body, _ := op["requestBody"].(map[string]any)
	content, _ := body["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	schema, _ := media["schema"].(map[string]any)
	oneOf, ok := schema["oneOf"].([]any)
	if !ok {
		return errors.New("request body schema has no oneOf")
	}
	schema["oneOf"] = append(oneOf,
		map[string]any{"type": "array", "minItems": json.Number("1"), "items": map[string]any{"type": "string"}},
		map[string]any{"type": "array", "minItems": json.Number("1"), "items": map[string]any{
			"type": "object", "required": []any{"name"}, "properties": map[string]any{"name": map[string]any{"type": "string"}},
		}},
	)
	return nil
}

func installationAccountAnyOf(op map[string]any) error {
	responses, _ := op["responses"].(map[string]any)
	ok200, _ := responses["200"].(map[string]any)
	content, _ := ok200["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	schema, _ := media["schema"].(map[string]any)
	items, _ := schema["items"].(map[string]any)
	props, _ := items["properties"].(map[string]any)
	account, _ := props["account"].(map[string]any)
	both, ok := account["allOf"]
	if !ok {
		return errors.New("the installation's account has no allOf")
	}
	delete(account, "allOf")
	account["anyOf"] = both
	return nil
}

func splitRef(ref string) (kind, name string, err error) {
	parts := strings.Split(strings.TrimPrefix(ref, "#/components/"), "/")
	if !strings.HasPrefix(ref, "#/components/") || len(parts) != 2 {
		return "", "", errors.New("unsupported reference " + ref)
	}
	return parts[0], parts[1], nil
}

// collectRefs appends every "$ref" under v.
func collectRefs(v any, refs []string) []string {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			refs = append(refs, ref)
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			refs = collectRefs(x[k], refs)
		}
	case []any:
		for _, item := range x {
			refs = collectRefs(item, refs)
		}
	}
	return refs
}

// stripExamples drops "example" and "examples", which validation does not read
// and which make up much of the description. Under "properties" the keys are
// field names, so a field called "example" is kept.
func stripExamples(v any) {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "example")
		delete(x, "examples")
		for k, child := range x {
			if k == "properties" {
				if props, ok := child.(map[string]any); ok {
					for _, schema := range props {
						stripExamples(schema)
					}
					continue
				}
			}
			stripExamples(child)
		}
	case []any:
		for _, item := range x {
			stripExamples(item)
		}
	}
}
