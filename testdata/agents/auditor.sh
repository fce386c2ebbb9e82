#!/bin/sh
# Auditor played by a script in Forge's tests (exec runtime). Round 1
# (FORGE_ROUND=1) finds one blocking problem, later rounds only a minor one,
# in the markdown form seed 000's verdict parsing reads
# ("- **Severity: blocking** — …"). A prompt or plan containing
# "forge-test: always-blocking" makes every round blocking, to reach the
# round cap.
set -eu
prompt=$(cat)

plan=$(find . -path ./.git -prune -o -type f -name "${FORGE_PLAN_ID}-*.md" ! -name '*-phases.md' -print | head -n 1)
blocking=false
if [ "${FORGE_ROUND}" = 1 ]; then
	blocking=true
fi
if printf '%s\n' "$prompt" | grep -q 'forge-test: always-blocking'; then
	blocking=true
elif [ -n "$plan" ] && grep -q 'forge-test: always-blocking' "$plan"; then
	blocking=true
fi

# Each finding names the plan file's line of the section concerned, so it
# can become an inline review comment on the plan pull request.
location() {
	[ -n "$plan" ] || return 0
	printf '  - **Location:** `%s:%s`\n' "${plan#./}" "$(grep -n "^## $1" "$plan" | head -n 1 | cut -d: -f1)"
}

if [ "$blocking" = true ]; then
	echo "Audit of ${FORGE_PLAN_ID}, round ${FORGE_ROUND}: needs revision."
else
	echo "Audit of ${FORGE_PLAN_ID}, round ${FORGE_ROUND}: ready to approve."
fi
echo
if [ "$blocking" = true ]; then
	echo '- **Severity: blocking** — Testing never checks that docs/hello.md exists after the phase, so a phase that writes nothing would pass.'
	location Testing
	echo '  - **Recommendation:** Add a check that fails the phase when the file is missing.'
fi
echo '- **Severity: minor** — The Objective could say who reads the page.'
location Objective
