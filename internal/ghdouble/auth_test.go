package ghdouble

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

func TestAppJWT(t *testing.T) {
	s := New(t)
	key, err := parseKey(s.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprint(s.AppID())
	now := time.Now()
	hs256, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": id, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix()}).SignedString([]byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	noExp, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": id, "iat": now.Unix()}).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		auth        string
		wantStatus  int
		wantMessage string
	}{
		{"as ghinstallation signs it", "Bearer " + appJWT(t, key, id, now.Add(-30*time.Second), now.Add(2*time.Minute)), 200, ""},
		{"iss as a number", "Bearer " + appJWT(t, key, s.AppID(), now, now.Add(time.Minute)), 200, ""},
		{"iss as the client id", "Bearer " + appJWT(t, key, s.App().ClientID, now, now.Add(time.Minute)), 200, ""},
		{"iat within the clock skew", "Bearer " + appJWT(t, key, id, now.Add(30*time.Second), now.Add(time.Minute)), 200, ""},
		{"exp exactly ten minutes away", "Bearer " + appJWT(t, key, id, now, now.Add(10*time.Minute-time.Second)), 200, ""},
		{"signed with another key", "Bearer " + appJWT(t, otherKey, id, now, now.Add(time.Minute)), 401, msgJWTUndecodable},
		{"HS256", "Bearer " + hs256, 401, msgJWTUndecodable},
		{"expired", "Bearer " + appJWT(t, key, id, now.Add(-11*time.Minute), now.Add(-time.Minute)), 401, msgJWTExpired},
		{"exp too far", "Bearer " + appJWT(t, key, id, now, now.Add(11*time.Minute)), 401, msgJWTTooLong},
		{"iat in the future", "Bearer " + appJWT(t, key, id, now.Add(5*time.Minute), now.Add(6*time.Minute)), 401, msgJWTIssuedAt},
		{"iat just beyond the clock skew", "Bearer " + appJWT(t, key, id, now.Add(65*time.Second), now.Add(2*time.Minute)), 401, msgJWTIssuedAt},
		{"an App id GitHub does not know", "Bearer " + appJWT(t, key, "1", now, now.Add(time.Minute)), 404, msgIntegrationNotFound},
		{"an App id as a number GitHub does not know", "Bearer " + appJWT(t, key, 1, now, now.Add(time.Minute)), 404, msgIntegrationNotFound},
		{"the App's id signed with another key", "Bearer " + appJWT(t, otherKey, s.AppID(), now, now.Add(time.Minute)), 401, msgJWTUndecodable},
		{"no exp", "Bearer " + noExp, 401, msgJWTExpired},
		{"iss not an id", "Bearer " + appJWT(t, key, "forge", now, now.Add(time.Minute)), 401, msgJWTIssuer},
		{"garbage", "Bearer not.a.jwt", 401, msgJWTUndecodable},
		{"token scheme", "token " + appJWT(t, key, id, now, now.Add(time.Minute)), 401, msgJWTUndecodable},
		{"no credential", "", 401, msgNoAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := call(t, "GET", s.URL()+"app", tt.auth, nil)
			if got.status != tt.wantStatus {
				t.Fatalf("status = %d (%s), want %d", got.status, got.raw, tt.wantStatus)
			}
			if tt.wantMessage != "" && got.json["message"] != tt.wantMessage {
				t.Errorf("message = %q, want %q", got.json["message"], tt.wantMessage)
			}
			if tt.wantStatus == 200 && got.json["id"] != float64(s.AppID()) {
				t.Errorf("GET /app id = %v, want %d", got.json["id"], s.AppID())
			}
		})
	}
}

// TestAppJWTOnASkewedClock: the token endpoint judges a JWT by the double's
// clock, as GitHub judges it by its own, and the Date header tells that clock.
// A JWT made as ghinstallation makes it (iat 30 s back, exp 90 s ahead) is
// refused once the clocks are more than 90 s apart, either way.
func TestAppJWTOnASkewedClock(t *testing.T) {
	tests := []struct {
		name       string
		skew       time.Duration // the double's clock minus the client's
		wantStatus int
		wantMsg    string
	}{
		{"double 5 minutes ahead: the JWT has expired", 5 * time.Minute, 401, msgJWTExpired},
		{"double 5 minutes behind: issued in its future", -5 * time.Minute, 401, msgJWTIssuedAt},
		{"double 12 minutes behind: iat is judged before exp", -12 * time.Minute, 401, msgJWTIssuedAt},
		{"double 20 seconds ahead: within what GitHub takes", 20 * time.Second, 201, ""},
		{"double 80 seconds behind: within the 60 s leeway on iat", -80 * time.Second, 201, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t, WithClock(func() time.Time { return time.Now().Add(tt.skew) }))
			inst := s.AddInstallation("acme")
			got := call(t, "POST", fmt.Sprintf("%sapp/installations/%d/access_tokens", s.URL(), inst), "Bearer "+validJWT(t, s), nil)
			if got.status != tt.wantStatus {
				t.Fatalf("status = %d (%s), want %d", got.status, got.raw, tt.wantStatus)
			}
			if tt.wantMsg != "" && got.json["message"] != tt.wantMsg {
				t.Errorf("message = %q, want %q", got.json["message"], tt.wantMsg)
			}
			date, err := http.ParseTime(got.header.Get("Date"))
			if err != nil {
				t.Fatalf("Date %q: %v", got.header.Get("Date"), err)
			}
			if off := date.Sub(time.Now().Add(tt.skew)); off < -2*time.Second || off > time.Second {
				t.Errorf("Date = %s, %s from the double's clock", date, off)
			}
		})
	}
}

// TestInstallationTokens covers how tokens are issued and what they reach.
func TestInstallationTokens(t *testing.T) {
	type env struct {
		s       *Server
		a, b    int64 // installations on acme and globex
		jwt     string
		advance func(time.Duration)
	}
	setup := func(t *testing.T) env {
		var shift time.Duration
		var mu sync.Mutex
		s := New(t, WithClock(func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return time.Now().Add(shift)
		}))
		advance := func(d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			shift += d
		}
		a, b := s.AddInstallation("acme"), s.AddInstallation("globex")
		s.AddRepo(a, "acme/widgets")
		s.AddRepo(a, "acme/gadgets")
		s.AddRepo(b, "globex/plans")
		return env{s: s, a: a, b: b, jwt: "Bearer " + validJWT(t, s), advance: advance}
	}
	tokenURL := func(e env, inst int64) string {
		return fmt.Sprintf("%sapp/installations/%d/access_tokens", e.s.URL(), inst)
	}

	t.Run("token shape", func(t *testing.T) {
		e := setup(t)
		got := call(t, "POST", tokenURL(e, e.a), e.jwt, nil)
		if got.status != http.StatusCreated {
			t.Fatalf("status %d %s", got.status, got.raw)
		}
		expires, err := time.Parse(time.RFC3339, got.json["expires_at"].(string))
		if err != nil || expires.Sub(time.Now()) < 59*time.Minute || expires.Sub(time.Now()) > time.Hour {
			t.Errorf("expires_at = %v (%v), want in an hour", got.json["expires_at"], err)
		}
		if perms := got.json["permissions"].(map[string]any); perms["issues"] != "write" || perms["metadata"] != "read" {
			t.Errorf("permissions = %v", perms)
		}
	})

	tests := []struct {
		name       string
		do         func(t *testing.T, e env) answer
		wantStatus int
		wantMsg    string
	}{
		{"own repository", func(t *testing.T, e env) answer {
			return call(t, "GET", e.s.URL()+"repos/acme/widgets", "token "+installationToken(t, e.s, e.a), nil)
		}, 200, ""},
		{"Bearer scheme", func(t *testing.T, e env) answer {
			return call(t, "GET", e.s.URL()+"repos/acme/widgets", "Bearer "+installationToken(t, e.s, e.a), nil)
		}, 200, ""},
		{"another installation's repository", func(t *testing.T, e env) answer {
			return call(t, "GET", e.s.URL()+"repos/globex/plans", "token "+installationToken(t, e.s, e.a), nil)
		}, 404, "Not Found"},
		{"repository that does not exist", func(t *testing.T, e env) answer {
			return call(t, "GET", e.s.URL()+"repos/acme/nothing", "token "+installationToken(t, e.s, e.a), nil)
		}, 404, "Not Found"},
		{"unknown token", func(t *testing.T, e env) answer {
			return call(t, "GET", e.s.URL()+"repos/acme/widgets", "token ghs_made_up", nil)
		}, 401, msgBadCredentials},
		{"App JWT instead of a token", func(t *testing.T, e env) answer {
			return call(t, "GET", e.s.URL()+"repos/acme/widgets", e.jwt, nil)
		}, 401, msgBadCredentials},
		{"no credential", func(t *testing.T, e env) answer {
			return call(t, "GET", e.s.URL()+"repos/acme/widgets", "", nil)
		}, 401, msgNoAuth},
		{"expired token", func(t *testing.T, e env) answer {
			token := installationToken(t, e.s, e.a)
			e.advance(time.Hour + time.Second)
			return call(t, "GET", e.s.URL()+"repos/acme/widgets", "token "+token, nil)
		}, 401, msgBadCredentials},
		{"token scoped to other repositories", func(t *testing.T, e env) answer {
			got := call(t, "POST", tokenURL(e, e.a), e.jwt, map[string]any{"repositories": []string{"gadgets"}})
			return call(t, "GET", e.s.URL()+"repos/acme/widgets", "token "+got.json["token"].(string), nil)
		}, 404, "Not Found"},
		{"token scoped to the repository", func(t *testing.T, e env) answer {
			got := call(t, "POST", tokenURL(e, e.a), e.jwt, map[string]any{"repositories": []string{"widgets"}})
			return call(t, "GET", e.s.URL()+"repos/acme/widgets", "token "+got.json["token"].(string), nil)
		}, 200, ""},
		{"scope to a repository of another installation", func(t *testing.T, e env) answer {
			return call(t, "POST", tokenURL(e, e.a), e.jwt, map[string]any{"repositories": []string{"plans"}})
		}, 422, "There is at least one repository that does not exist or is not accessible to the parent installation."},
		{"token with narrower permissions", func(t *testing.T, e env) answer {
			e.s.AddIssue("acme/widgets", IssueSpec{Title: "t"})
			got := call(t, "POST", tokenURL(e, e.a), e.jwt, map[string]any{"permissions": map[string]string{"issues": "read"}})
			return call(t, "POST", e.s.URL()+"repos/acme/widgets/issues/1/comments", "token "+got.json["token"].(string), map[string]any{"body": "hi"})
		}, 403, "Resource not accessible by integration"},
		{"permissions beyond the installation's", func(t *testing.T, e env) answer {
			return call(t, "POST", tokenURL(e, e.a), e.jwt, map[string]any{"permissions": map[string]string{"administration": "write"}})
		}, 422, "The permissions requested are not granted to this installation."},
		{"token of an unknown installation", func(t *testing.T, e env) answer {
			return call(t, "POST", tokenURL(e, 999999), e.jwt, nil)
		}, 404, "Not Found"},
		{"token of a deleted installation", func(t *testing.T, e env) answer {
			e.s.DeleteInstallation(e.a)
			return call(t, "POST", tokenURL(e, e.a), e.jwt, nil)
		}, 404, "Not Found"},
		{"token issued before the installation was deleted", func(t *testing.T, e env) answer {
			token := installationToken(t, e.s, e.a)
			e.s.DeleteInstallation(e.a)
			return call(t, "GET", e.s.URL()+"repos/acme/widgets", "token "+token, nil)
		}, 401, msgBadCredentials},
		{"token of a suspended installation", func(t *testing.T, e env) answer {
			e.s.SuspendInstallation(e.a)
			return call(t, "POST", tokenURL(e, e.a), e.jwt, nil)
		}, 403, msgSuspended},
		{"token issued before the installation was suspended", func(t *testing.T, e env) answer {
			token := installationToken(t, e.s, e.a)
			e.s.SuspendInstallation(e.a)
			return call(t, "GET", e.s.URL()+"repos/acme/widgets", "token "+token, nil)
		}, 403, msgSuspended},
		{"suspended installation is still described", func(t *testing.T, e env) answer {
			e.s.SuspendInstallation(e.a)
			return call(t, "GET", fmt.Sprintf("%sapp/installations/%d", e.s.URL(), e.a), e.jwt, nil)
		}, 200, ""},
		{"deleted installation is not", func(t *testing.T, e env) answer {
			e.s.DeleteInstallation(e.a)
			return call(t, "GET", fmt.Sprintf("%sapp/installations/%d", e.s.URL(), e.a), e.jwt, nil)
		}, 404, "Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.do(t, setup(t))
			if got.status != tt.wantStatus {
				t.Fatalf("status = %d (%s), want %d", got.status, got.raw, tt.wantStatus)
			}
			if tt.wantMsg != "" && got.json["message"] != tt.wantMsg {
				t.Errorf("message = %q, want %q", got.json["message"], tt.wantMsg)
			}
		})
	}
}

func TestConfiguredApp(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pemEncode(key)
	s := New(t, WithAppID(4242), WithPrivateKey(pemKey), WithWebhookSecret("s3cret"), WithAppName("Forge Dev"))
	if s.AppID() != 4242 || string(s.PrivateKeyPEM()) != string(pemKey) || s.WebhookSecret() != "s3cret" {
		t.Errorf("App = %d, secret %q, key changed: %v", s.AppID(), s.WebhookSecret(), string(s.PrivateKeyPEM()) != string(pemKey))
	}
	if s.BotLogin() != "forge-dev[bot]" {
		t.Errorf("BotLogin = %q, want forge-dev[bot]", s.BotLogin())
	}
	inst := s.AddInstallation("acme")
	s.AddRepo(inst, "acme/widgets")
	if _, _, err := client(t, s, inst).Repositories.Get(t.Context(), "acme", "widgets"); err != nil {
		t.Errorf("configured App cannot work: %v", err)
	}
}
