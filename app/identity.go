package app

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/palantir/go-githubapp/githubapp"
)

// botIdentity is who Forge is on GitHub: its App's id, from the
// configuration, and its bot user's login, "<slug>[bot]", which GitHub
// gives no other account and which GET /app tells once per process. Only
// what this account wrote is Forge's: its markers are the only ones
// Forge trusts.
type botIdentity struct {
	appID   int64
	clients githubapp.ClientCreator

	mu    sync.Mutex
	login string
}

// botLogin is the login of the App's bot user, asked of GitHub the first
// time and kept; a failure is asked again next time.
func (b *botIdentity) botLogin(ctx context.Context) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.login != "" {
		return b.login, nil
	}
	client, err := b.clients.NewAppClient()
	if err != nil {
		return "", fmt.Errorf("app client: %w", err)
	}
	app, _, err := client.Apps.Get(ctx, "")
	if err != nil {
		return "", fmt.Errorf("ask GitHub for the App's slug (GET /app): %w", apiError(err))
	}
	if app.GetSlug() == "" {
		return "", fmt.Errorf("GET /app named no slug for App %d", app.GetID())
	}
	b.login = app.GetSlug() + "[bot]"
	return b.login, nil
}

// wrote reports whether an author GitHub shows as login, of type typ, is
// Forge's bot: the App's bot user, and, where GitHub says which App
// performed the write (viaApp, 0 where it does not say), Forge's App. The
// App alone is not enough: a person's comment made with a user token the
// App obtained is performed via the App too.
func (b *botIdentity) wrote(ctx context.Context, login, typ string, viaApp int64) (bool, error) {
	if b == nil || typ != "Bot" {
		return false, nil
	}
	if viaApp != 0 && viaApp != b.appID {
		return false, nil
	}
	own, err := b.botLogin(ctx)
	if err != nil {
		return false, err
	}
	return strings.EqualFold(login, own), nil
}
