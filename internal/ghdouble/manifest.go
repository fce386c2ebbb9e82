package ghdouble

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// manifestCodeLifetime is how long GitHub honours the code of the manifest flow.
const manifestCodeLifetime = time.Hour

type manifestCode struct {
	manifest  map[string]any
	owner     string
	createdAt time.Time
}

// eventPermissions says which App permission each webhook event needs; GitHub
// refuses a manifest subscribing to an event its permissions do not cover, and
// any event not listed here.
var eventPermissions = map[string]string{
	"check_run":                   "checks",
	"check_suite":                 "checks",
	"commit_comment":              "contents",
	"create":                      "contents",
	"delete":                      "contents",
	"deployment":                  "deployments",
	"deployment_status":           "deployments",
	"discussion":                  "discussions",
	"discussion_comment":          "discussions",
	"fork":                        "contents",
	"gollum":                      "contents",
	"issue_comment":               "issues|pull_requests",
	"issues":                      "issues",
	"label":                       "metadata",
	"member":                      "members",
	"merge_group":                 "merge_queues",
	"milestone":                   "issues|pull_requests",
	"public":                      "metadata",
	"pull_request":                "pull_requests",
	"pull_request_review":         "pull_requests",
	"pull_request_review_comment": "pull_requests",
	"pull_request_review_thread":  "pull_requests",
	"push":                        "contents",
	"release":                     "contents",
	"repository":                  "metadata",
	"star":                        "metadata",
	"status":                      "statuses",
	"team_add":                    "members",
	"watch":                       "metadata",
	"workflow_dispatch":           "actions",
	"workflow_job":                "actions",
	"workflow_run":                "actions",
}

// Manifest is the manifest last posted to the web side's /settings/apps/new.
func (s *Server) Manifest() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.lastManifest)
}

func (s *Server) manifestWebRoutes() []WebRoute {
	return []WebRoute{
		{Pattern: "POST /settings/apps/new", Handler: s.serveNewApp},
		{Pattern: "POST /organizations/{org}/settings/apps/new", Handler: s.serveNewApp},
	}
}

// serveNewApp plays the person who opened GitHub's "Create GitHub App" page from
// a manifest form and clicked the button: it redirects to the manifest's
// redirect_url with a one-time code, and the state the form carried (in the
// action's query string, as GitHub's documentation shows, or as a field).
func (s *Server) serveNewApp(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.refuseManifest(w, r, []string{fmt.Sprintf("form: %v", err)})
		return
	}
	var manifest map[string]any
	if err := json.Unmarshal([]byte(r.PostForm.Get("manifest")), &manifest); err != nil || manifest == nil {
		s.refuseManifest(w, r, []string{"the manifest field must hold a JSON object"})
		return
	}
	if problems := s.checkManifest(manifest); len(problems) > 0 {
		s.refuseManifest(w, r, problems)
		return
	}
	owner := s.webLogin
	if org := r.PathValue("org"); org != "" {
		s.ensureUser(org, "Organization")
		owner = org
	}
	code := randomHex(20)
	s.mu.Lock()
	s.lastManifest = manifest
	s.manifestCodes[code] = &manifestCode{manifest: manifest, owner: owner, createdAt: s.now()}
	s.mu.Unlock()

	target, _ := url.Parse(manifest["redirect_url"].(string))
	q := target.Query()
	q.Set("code", code)
	if state := r.Form.Get("state"); state != "" {
		q.Set("state", state)
	}
	target.RawQuery = q.Encode()
	http.Redirect(w, r, target.String(), http.StatusFound)
}

// refuseManifest fails the test: a manifest GitHub refuses leaves the person on
// an error page, something no code path of the App can recover from.
func (s *Server) refuseManifest(w http.ResponseWriter, r *http.Request, problems []string) {
	s.reportf("%s %s: GitHub would refuse this App manifest: %s", r.Method, r.URL.Path, strings.Join(problems, "; "))
	http.Error(w, "Invalid GitHub App manifest:\n"+strings.Join(problems, "\n"), http.StatusUnprocessableEntity)
}

// checkManifest lists what GitHub would refuse in the manifest.
func (s *Server) checkManifest(m map[string]any) []string {
	var problems []string
	name, _ := m["name"].(string)
	switch {
	case strings.TrimSpace(name) == "":
		problems = append(problems, "name is required")
	case len([]rune(name)) > 34:
		problems = append(problems, "name is too long (maximum is 34 characters)")
	}
	for _, field := range []string{"url", "redirect_url"} {
		if msg := checkURL(m[field], true); msg != "" {
			problems = append(problems, field+" "+msg)
		}
	}
	if v, ok := m["callback_urls"]; ok {
		list, isList := v.([]any)
		switch {
		case !isList:
			problems = append(problems, "callback_urls must be an array of URLs")
		case len(list) > maxCallbackURLs:
			problems = append(problems, fmt.Sprintf("callback_urls holds at most %d URLs", maxCallbackURLs))
		}
		for _, u := range list {
			if msg := checkURL(u, true); msg != "" {
				problems = append(problems, "callback_urls "+msg)
			}
		}
	}
	for _, field := range []string{"setup_url", "description"} {
		if v, ok := m[field]; ok && v != nil {
			if _, isString := v.(string); !isString {
				problems = append(problems, field+" must be a string")
			}
		}
	}
	for _, field := range []string{"public", "request_oauth_on_install", "setup_on_update"} {
		if v, ok := m[field]; ok {
			if _, isBool := v.(bool); !isBool {
				problems = append(problems, field+" must be a boolean")
			}
		}
	}
	hook, ok := m["hook_attributes"].(map[string]any)
	if !ok {
		problems = append(problems, "hook_attributes is required")
	} else {
		if msg := checkURL(hook["url"], true); msg != "" {
			problems = append(problems, "hook_attributes.url "+msg)
		}
		if v, ok := hook["active"]; ok {
			if _, isBool := v.(bool); !isBool {
				problems = append(problems, "hook_attributes.active must be a boolean")
			}
		}
	}
	if v, ok := m["callback_urls"]; ok {
		urls, isList := v.([]any)
		if !isList || len(urls) > 10 {
			problems = append(problems, "callback_urls must be a list of at most 10 URLs")
		}
		for _, u := range urls {
			if msg := checkURL(u, true); msg != "" {
				problems = append(problems, "callback_urls "+msg)
			}
		}
	}
	perms, permProblems := s.checkPermissions(m["default_permissions"])
	problems = append(problems, permProblems...)
	if v, ok := m["default_events"]; ok {
		events, isList := v.([]any)
		if !isList {
			problems = append(problems, "default_events must be a list of event names")
		}
		for _, e := range events {
			name, _ := e.(string)
			need, known := eventPermissions[name]
			switch {
			case !known:
				problems = append(problems, fmt.Sprintf("default_events: %q is not a webhook event an App can subscribe to", e))
			case !slices.ContainsFunc(strings.Split(need, "|"), func(p string) bool { return perms[p] != "" }):
				problems = append(problems, fmt.Sprintf("default_events: %q needs the %s permission", name, strings.ReplaceAll(need, "|", " or ")))
			}
		}
	}
	return problems
}

// checkPermissions checks default_permissions against the app-permissions schema
// of GitHub's OpenAPI description: known names, and levels in each one's enum.
func (s *Server) checkPermissions(v any) (map[string]string, []string) {
	perms := map[string]string{"metadata": "read"}
	if v == nil {
		return perms, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return perms, []string{"default_permissions must be an object"}
	}
	schema := s.routes.doc.Components.Schemas["app-permissions"].Value
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		level, _ := m[name].(string)
		prop := schema.Properties[name]
		if prop == nil {
			problems = append(problems, fmt.Sprintf("default_permissions: %q is not a permission", name))
			continue
		}
		if !slices.Contains(prop.Value.Enum, any(level)) {
			problems = append(problems, fmt.Sprintf("default_permissions: %s cannot be %q (want one of %v)", name, m[name], prop.Value.Enum))
			continue
		}
		perms[name] = level
	}
	return perms, problems
}

func checkURL(v any, required bool) string {
	s, ok := v.(string)
	if !ok || s == "" {
		if required {
			return "is required"
		}
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("%q is not an http(s) URL", s)
	}
	return ""
}

func (s *Server) manifestRoutes() []Route {
	return []Route{
		{Method: "POST", Path: "/app-manifests/{code}/conversions", Auth: AuthNone, Handler: s.convertManifest},
	}
}

// convertManifest creates the App, once per code, and makes it the double's App.
func (s *Server) convertManifest(c *Call) (int, any) {
	s.mu.Lock()
	mc := s.manifestCodes[c.Param("code")]
	delete(s.manifestCodes, c.Param("code"))
	s.mu.Unlock()
	if mc == nil || s.now().Sub(mc.createdAt) > manifestCodeLifetime {
		return notFound()
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		s.reportf("generate key for the manifest's App: %v", err)
		return http.StatusInternalServerError, &Error{Message: "Server Error"}
	}
	m := mc.manifest
	perms, _ := s.checkPermissions(m["default_permissions"])
	var events []string
	if list, ok := m["default_events"].([]any); ok {
		for _, e := range list {
			events = append(events, e.(string))
		}
	}
	name := m["name"].(string)
	app := &App{
		ID:            s.nextID(),
		Slug:          slugify(name),
		Name:          name,
		Owner:         mc.owner,
		ClientID:      "Iv23li" + randomHex(7),
		ClientSecret:  randomHex(20),
		WebhookSecret: randomHex(20),
		HookURL:       m["hook_attributes"].(map[string]any)["url"].(string),
		ExternalURL:   m["url"].(string),
		Permissions:   perms,
		Events:        events,
		HookID:        s.nextID(),
		CreatedAt:     s.now().UTC().Truncate(time.Second),
		key:           key,
		keyPEM:        pemEncode(key),
	}
	if d, ok := m["description"].(string); ok {
		app.Description = d
	}
	if list, ok := m["callback_urls"].([]any); ok {
		for _, u := range list {
			app.CallbackURLs = append(app.CallbackURLs, u.(string))
		}
	}
	s.mu.Lock()
	s.app = app
	s.mu.Unlock()
	s.ensureUser(app.botLogin(), "Bot")

	out := s.appJSON(app)
	out["client_secret"] = app.ClientSecret
	out["webhook_secret"] = app.WebhookSecret
	out["pem"] = string(app.keyPEM)
	return http.StatusCreated, out
}
