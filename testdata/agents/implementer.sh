#!/bin/sh
# Implementer played by a script in Forge's tests (exec runtime): it writes
# each file the phase's prompt lists under "Files of this phase:"; asked to
# fix audit findings, it appends a line to the file each finding names.
set -eu
prompt=$(cat)
if printf '%s\n' "$prompt" | grep -q "Resolve the post-implementation audit's findings"; then
	for f in $(printf '%s\n' "$prompt" | sed -n 's/.*(location: \([^:)]*\).*/\1/p' | sort -u); do
		printf 'Fixed by %s.\n' "$FORGE_PHASE_ID" >> "$f"
	done
	echo "Fixed the findings of $FORGE_PHASE_ID"
	exit 0
fi
files=$(printf '%s\n' "$prompt" | sed -n '/^Files of this phase:/,/^$/p' | sed -n 's/^- `\(.*\)`$/\1/p')
for f in $files; do
	mkdir -p "$(dirname "$f")"
	printf '# %s\n\nWritten by %s of %s.\n' "$f" "$FORGE_PHASE_ID" "$FORGE_PLAN_ID" > "$f"
done
echo "Implemented $FORGE_PHASE_ID: $(echo $files | tr '\n' ' ')"
