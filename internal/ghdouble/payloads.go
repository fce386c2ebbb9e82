package ghdouble

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	forge "github.com/forge-dev/forge"
)

// Payload reads a recorded webhook payload of testdata/webhooks, which the
// binary embeds (forge.WebhookPayloads): "issue_comment/created" is
// issue_comment/created.payload.json, and an event without actions ("ping")
// is ping/payload.json.
func Payload(name string) ([]byte, error) {
	candidates := []string{path.Join(payloadDir, name+".payload.json"), path.Join(payloadDir, name, "payload.json")}
	for _, p := range candidates {
		data, err := fs.ReadFile(forge.WebhookPayloads, p)
		if err == nil {
			return data, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("load payload %s: %w", name, err)
		}
	}
	return nil, fmt.Errorf("no webhook payload %q (looked for %s)", name, strings.Join(candidates, ", "))
}

const payloadDir = "testdata/webhooks"

// LoadPayload is Payload for a test, which fails when there is none.
func LoadPayload(t T, name string) []byte {
	t.Helper()
	data, err := Payload(name)
	if err != nil {
		t.Fatalf("ghdouble: %v", err)
	}
	return data
}

// Edit changes a decoded webhook payload.
type Edit func(payload map[string]any) error

// ApplyEdits applies the edits to a JSON payload and encodes it again.
func ApplyEdits(payload []byte, edits ...Edit) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		return nil, fmt.Errorf("decode payload: %w", err)
	}
	for _, edit := range edits {
		if err := edit(m); err != nil {
			return nil, fmt.Errorf("edit payload: %w", err)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode payload: %w", err)
	}
	return out, nil
}

// EditPayload is ApplyEdits for a test, which fails on an error.
func EditPayload(t T, payload []byte, edits ...Edit) []byte {
	t.Helper()
	out, err := ApplyEdits(payload, edits...)
	if err != nil {
		t.Fatalf("ghdouble: %v", err)
	}
	return out
}

// Set puts value at a dotted path ("comment.body", "issue.labels.0.name"),
// creating missing objects on the way. The value goes through JSON, so structs
// and the double's own renderings are stored as GitHub would send them.
func Set(path string, value any) Edit {
	return func(m map[string]any) error {
		data, err := json.Marshal(value)
		if err != nil {
			return fmt.Errorf("set %s: %w", path, err)
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return fmt.Errorf("set %s: %w", path, err)
		}
		parent, last, err := walk(m, path, true)
		if err != nil {
			return err
		}
		return parent.put(last, v)
	}
}

// Delete removes the value at a dotted path; a missing path is an error.
func Delete(path string) Edit {
	return func(m map[string]any) error {
		parent, last, err := walk(m, path, false)
		if err != nil {
			return err
		}
		obj, ok := parent.v.(map[string]any)
		if _, found := obj[last]; !ok || !found {
			return fmt.Errorf("delete %s: no such field", path)
		}
		delete(obj, last)
		return nil
	}
}

// container is an object or an array found on a path.
type container struct{ v any }

func (c container) put(key string, v any) error {
	switch x := c.v.(type) {
	case map[string]any:
		x[key] = v
		return nil
	case []any:
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i >= len(x) {
			return fmt.Errorf("index %q out of range of %d items", key, len(x))
		}
		x[i] = v
		return nil
	}
	return fmt.Errorf("cannot set %q in a %T", key, c.v)
}

func (c container) get(key string) (any, bool) {
	switch x := c.v.(type) {
	case map[string]any:
		v, ok := x[key]
		return v, ok
	case []any:
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i >= len(x) {
			return nil, false
		}
		return x[i], true
	}
	return nil, false
}

// walk goes to the container of the path's last segment.
func walk(m map[string]any, path string, create bool) (container, string, error) {
	segs := strings.Split(path, ".")
	cur := container{m}
	for _, seg := range segs[:len(segs)-1] {
		next, ok := cur.get(seg)
		if !ok || next == nil {
			if !create {
				return container{}, "", fmt.Errorf("path %s: no field %q", path, seg)
			}
			next = map[string]any{}
			if err := cur.put(seg, next); err != nil {
				return container{}, "", fmt.Errorf("path %s: %w", path, err)
			}
		}
		switch next.(type) {
		case map[string]any, []any:
		default:
			return container{}, "", fmt.Errorf("path %s: %q is a %T, not an object", path, seg, next)
		}
		cur = container{next}
	}
	return cur, segs[len(segs)-1], nil
}

// InstallationEdit sets "installation" to {id, node_id}, as GitHub adds to every
// delivery for an App.
func (s *Server) InstallationEdit(id int64) Edit {
	return Set("installation", map[string]any{"id": id, "node_id": nodeID("IntegrationInstallation", id)})
}

// RepositoryEdit sets "repository" to the double's rendering of repo, so ids and
// names in the payload match what the API answers.
func (s *Server) RepositoryEdit(repo string) Edit {
	return func(m map[string]any) error {
		r := s.Repo(repo)
		if r == nil {
			return fmt.Errorf("repository %q: not in the double", repo)
		}
		return Set("repository", s.repoJSON(r))(m)
	}
}

// SenderEdit sets "sender" to the account login (a person unless known otherwise).
func (s *Server) SenderEdit(login string) Edit {
	return func(m map[string]any) error {
		return Set("sender", s.loginJSON(login))(m)
	}
}

// IssueEdit sets "issue" to the double's rendering of the issue.
func (s *Server) IssueEdit(repo string, number int) Edit {
	return func(m map[string]any) error {
		r := s.Repo(repo)
		if r == nil {
			return fmt.Errorf("repository %q: not in the double", repo)
		}
		r.mu.Lock()
		is := r.issues[number]
		var rendered map[string]any
		if is != nil {
			rendered = s.issueJSONLocked(r, is)
		}
		r.mu.Unlock()
		if rendered == nil {
			return fmt.Errorf("%s has no issue #%d", repo, number)
		}
		return Set("issue", rendered)(m)
	}
}

// CommentEdit sets "comment" to the double's rendering of the issue
// comment. An "issue" already set counts the comments before this one, as
// GitHub's issue_comment events do (octokit's recorded payload of a first
// comment says 0; octobox/octobox#1478 shows a second comment's saying 1).
func (s *Server) CommentEdit(repo string, commentID int64) Edit {
	return func(m map[string]any) error {
		r := s.Repo(repo)
		if r == nil {
			return fmt.Errorf("repository %q: not in the double", repo)
		}
		r.mu.Lock()
		cm := r.comments[commentID]
		var rendered map[string]any
		before := 0
		if cm != nil {
			rendered = s.commentJSONLocked(r, cm)
			for _, other := range r.comments {
				if other.Issue == cm.Issue && other.ID < cm.ID {
					before++
				}
			}
		}
		r.mu.Unlock()
		if is, ok := m["issue"].(map[string]any); ok && cm != nil && fmt.Sprint(is["number"]) == fmt.Sprint(cm.Issue) {
			is["comments"] = before
		}
		if rendered == nil {
			return fmt.Errorf("%s has no issue comment %d", repo, commentID)
		}
		return Set("comment", rendered)(m)
	}
}
