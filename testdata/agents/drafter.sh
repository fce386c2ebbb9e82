#!/bin/sh
# Drafter played by a script in Forge's tests (exec runtime). It answers with
# a whole plan: the header of the plan file Forge committed in the working
# copy, then every section the structural pre-flight requires, with no
# placeholder text, and the one path under Changes marked new.
set -eu
cat >/dev/null # the prompt; read it so Forge's write never meets a closed pipe

plan=$(find . -path ./.git -prune -o -type f -name "${FORGE_PLAN_ID}-*.md" ! -name '*-phases.md' -print | head -n 1)
if [ -n "$plan" ]; then
	sed '/^## /,$d' "$plan" # the header: everything above the first section
else
	printf '# Plan: Greeting page\n\n**ID:** %s\n**Status:** DRAFT\n\n' "$FORGE_PLAN_ID"
fi

cat <<'PLAN'
## Objective

Add a short page that tells contributors how the project greets new users.

## Scope

In scope: one new documentation page. Out of scope: code, configuration and
the existing documentation.

## Changes

- `docs/hello.md` (new) — a page with the greeting and one sentence on when
  to use it.

## Risks

- The page could drift from the wording the project uses elsewhere; it
  quotes the README's greeting verbatim.

## Testing

- Read the rendered page on the pull request and check the greeting matches
  the README.

---

## Audit Log

---

## Implementation Notes
PLAN
