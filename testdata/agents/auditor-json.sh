#!/bin/sh
# The auditor of auditor.sh, answering in the JSON form DESIGN §3 accepts:
# {"issues":[{"severity","description","location","recommendation"}]}.
# Each location is the plan file's line of the section concerned, so it can
# become an inline review comment on the plan pull request.
set -eu
cat >/dev/null

plan=$(find . -path ./.git -prune -o -type f -name "${FORGE_PLAN_ID}-*.md" ! -name '*-phases.md' -print | head -n 1)
if [ -z "$plan" ]; then
	echo "auditor-json.sh: no plan file for ${FORGE_PLAN_ID} in $(pwd)" >&2
	exit 1
fi
path=${plan#./}
line_of() { grep -n "^## $1" "$plan" | head -n 1 | cut -d: -f1; }

printf '{"issues":['
if [ "${FORGE_ROUND}" = 1 ]; then
	printf '{"severity":"blocking","description":"Testing never checks that docs/hello.md exists after the phase.","location":"%s:%s","recommendation":"Add a check that fails the phase when the file is missing."},' "$path" "$(line_of Testing)"
fi
printf '{"severity":"minor","description":"The Objective could say who reads the page.","location":"%s:%s","recommendation":"Name the readers."}' "$path" "$(line_of Objective)"
printf ']}\n'
