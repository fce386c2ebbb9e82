#!/bin/sh
# Reviser played by a script in Forge's tests (exec runtime). It answers with
# the plan file of the working copy, with the blocking finding of auditor.sh
# addressed: a check under "## Testing", noting the round it answers. The
# people's notes it was given are echoed at the end (Implementation Notes),
# one "Reviewer note taken:" line each, so tests see what reached it.
set -eu
prompt=$(cat)
notes=$(printf '%s\n' "$prompt" | awk '
	/^Notes from the people reviewing the plan/ { on = 1; next }
	/^The project.s standing constraints|^The plan as it stands/ { on = 0 }
	on && NF && !/^(```|~~~)/ { print "- Reviewer note taken: " $0 }
')

plan=$(find . -path ./.git -prune -o -type f -name "${FORGE_PLAN_ID}-*.md" ! -name '*-phases.md' -print | head -n 1)
if [ -z "$plan" ]; then
	echo "reviser.sh: no plan file for ${FORGE_PLAN_ID} in $(pwd)" >&2
	exit 1
fi
awk -v round="${FORGE_ROUND}" '
	{ print }
	/^## Testing/ {
		print ""
		print "- Check that `docs/hello.md` exists after the phase and fail the phase when it does not (answers audit round " round ")."
	}
' "$plan"
if [ -n "$notes" ]; then
	printf '\n%s\n' "$notes"
fi
