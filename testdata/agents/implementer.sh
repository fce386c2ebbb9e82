#!/bin/sh
# Implementer played by a script in Forge's tests (exec runtime): it writes
# each file the phase's prompt lists under "Files of this phase:", and
# answers with one line.
set -eu
prompt=$(cat)
files=$(printf '%s\n' "$prompt" | sed -n '/^Files of this phase:/,/^$/p' | sed -n 's/^- `\(.*\)`$/\1/p')
for f in $files; do
	mkdir -p "$(dirname "$f")"
	printf '# %s\n\nWritten by %s of %s.\n' "$f" "$FORGE_PHASE_ID" "$FORGE_PLAN_ID" > "$f"
done
echo "Implemented $FORGE_PHASE_ID: $(echo $files | tr '\n' ' ')"
