#!/bin/sh
# Phase auditor played by a script in Forge's tests: it finds one minor
# problem on line 1 of the first file of the diff it is shown.
set -eu
prompt=$(cat)
first=$(printf '%s\n' "$prompt" | sed -n 's/^--- \(.*\) (\(added\|modified\))$/\1/p' | grep -v '^docs/plans/' | head -n 1)
echo "Audit of ${FORGE_PLAN_ID} ${FORGE_PHASE_ID}: ready to approve."
echo
echo '- **Severity: minor** — The page could link back to the README.'
if [ -n "$first" ]; then
	printf '  - **Location:** `%s:1`\n' "$first"
fi
