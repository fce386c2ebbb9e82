package pipeline

import (
	"context"
	"errors"
	"strings"

	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// steerPermission is the permission a person needs to steer a plan of repo
// (a command, the trigger label, a review, a button): approval.min_permission
// of the configuration on the default branch. A configuration that does not
// parse, or that the operator's policy refuses, leaves the policy's floor:
// the people allowed to are told about it by the command that reads it.
func (f *Forge) steerPermission(ctx context.Context, installationID int64, repo Repo, branch string) (string, error) {
	ws, err := f.Installations.Workspace(ctx, installationID)
	if err != nil {
		return "", err
	}
	cfg, err := f.readRepoConfig(ctx, ws, repo, branch)
	var ce *repoconfig.Error
	if errors.As(err, &ce) {
		return f.permissionFloor(repo), nil
	}
	if err != nil {
		// An empty repository has no default branch to read: the operator's
		// floor holds, as it does for a repository without a configuration.
		zerolog.Ctx(ctx).Warn().Err(err).Str("repo", repo.String()).Msg("read who may steer plans: the policy's minimum permission holds")
		return f.permissionFloor(repo), nil
	}
	return cfg.Approval.Permission(), nil
}

// permissionFloor is the least permission the operator's policy lets a
// repository of repo's pattern ask for: what holds when its own
// configuration cannot be read.
func (f *Forge) permissionFloor(repo Repo) string {
	rule, _ := f.Policy.For(repo)
	return repoconfig.Approval{MinPermission: rule.MinPermission.Min}.Permission()
}

// refuseOnce answers a person below the repository's minimum permission
// once per issue or pull request (a command, a label, a button): pressing
// or commenting again makes no more noise.
func (f *Forge) refuseOnce(ctx context.Context, gh GitHub, repo Repo, number int, r *templates.Refusal) error {
	marker := Marker(0, "refusal", strings.ToLower(r.User))
	return f.answer(ctx, gh, repo, number, marker, "", r)
}

// maySteer reports whether user may steer the plans of repo, whose
// configuration is read from branch (steerPermission, then steers); need
// is the permission that takes, for a refusal to name.
func (f *Forge) maySteer(ctx context.Context, gh GitHub, installationID int64, repo Repo, branch, user, what string) (need string, ok bool, err error) {
	need, err = f.steerPermission(ctx, installationID, repo, branch)
	if err != nil {
		return "", false, err
	}
	ok, err = f.steers(ctx, gh, installationID, repo, user, need, what)
	return need, ok, err
}

// steers reports whether user's role on repo reaches need. Someone below it
// starts nothing; the log keeps who tried.
func (f *Forge) steers(ctx context.Context, gh GitHub, installationID int64, repo Repo, user, need, what string) (bool, error) {
	perm, err := f.permission(ctx, gh, installationID, repo, user)
	if err != nil {
		return false, err
	}
	if repoconfig.AtLeast(perm, need) {
		return true, nil
	}
	zerolog.Ctx(ctx).Info().Str("user", user).Str("permission", perm).Str("need", need).Str("repo", repo.String()).
		Msg(what + " ignored: the person's permission is below the repository's minimum")
	return false, nil
}
