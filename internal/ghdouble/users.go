package ghdouble

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"sync"
)

// User is an account: a person ("User"), an organization ("Organization") or an
// App's bot ("Bot").
type User struct {
	Login string
	ID    int64
	Type  string
}

// userTable is a leaf lock: nothing else is taken while it is held.
type userTable struct {
	mu      sync.Mutex
	byLogin map[string]*User // by lower-cased login, as GitHub logins are case-insensitive
}

// ensureUser returns the account, creating it with typ when it does not exist.
func (s *Server) ensureUser(login, typ string) *User {
	s.users.mu.Lock()
	defer s.users.mu.Unlock()
	if u, ok := s.users.byLogin[strings.ToLower(login)]; ok {
		return u
	}
	u := &User{Login: login, ID: s.nextID(), Type: typ}
	s.users.byLogin[strings.ToLower(login)] = u
	return u
}

func (s *Server) findUser(login string) *User {
	s.users.mu.Lock()
	defer s.users.mu.Unlock()
	return s.users.byLogin[strings.ToLower(login)]
}

// AddUser makes a person known to the double (a collaborator, a commenter) and
// returns it; an existing account is returned as it is.
func (s *Server) AddUser(login string) User {
	return *s.ensureUser(login, "User")
}

// botUser is the current App's bot account.
func (s *Server) botUser() *User {
	s.mu.Lock()
	login := s.app.botLogin()
	s.mu.Unlock()
	return s.ensureUser(login, "Bot")
}

// nodeID imitates GitHub's legacy global ids: base64 of "<len>:<Type><id>".
func nodeID(typ string, id int64) string {
	s := fmt.Sprintf("%s%d", typ, id)
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%02d:%s", len(typ), s))
}

// userJSON is a simple-user.
func (s *Server) userJSON(u *User) map[string]any {
	// GitHub escapes the brackets of bot logins in URLs: /users/forge%5Bbot%5D.
	api := s.apiBase() + "/users/" + url.PathEscape(u.Login)
	html := s.WebURL() + url.PathEscape(u.Login)
	if login, ok := strings.CutSuffix(u.Login, "[bot]"); ok && u.Type == "Bot" {
		html = s.WebURL() + "apps/" + login
	}
	return map[string]any{
		"login":               u.Login,
		"id":                  u.ID,
		"node_id":             nodeID(u.Type, u.ID),
		"avatar_url":          fmt.Sprintf("%savatars/u/%d?v=4", s.WebURL(), u.ID),
		"gravatar_id":         "",
		"url":                 api,
		"html_url":            html,
		"followers_url":       api + "/followers",
		"following_url":       api + "/following{/other_user}",
		"gists_url":           api + "/gists{/gist_id}",
		"starred_url":         api + "/starred{/owner}{/repo}",
		"subscriptions_url":   api + "/subscriptions",
		"organizations_url":   api + "/orgs",
		"repos_url":           api + "/repos",
		"events_url":          api + "/events{/privacy}",
		"received_events_url": api + "/received_events",
		"type":                u.Type,
		"site_admin":          false,
		"user_view_type":      "public",
	}
}

// loginJSON renders the account with that login, creating a person if unknown.
func (s *Server) loginJSON(login string) map[string]any {
	return s.userJSON(s.ensureUser(login, "User"))
}
