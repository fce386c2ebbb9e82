#!/bin/sh
# Codex played by a script in Forge's tests (an exec runtime with output:
# codex-json). Run as `codex exec --json`, with `resume <session id> -` to
# continue a thread, it prints what the real CLI prints: one event a line
# (openai/codex docs/exec.md, codex-rs/exec/src/exec_events.rs). The answer
# is the role's own script in this directory.
#
# Its threads live under CODEX_HOME as the real CLI's live under
# ~/.codex/sessions; an id it does not have is refused as the real CLI
# refuses it ("ERROR: No saved session found with ID …", status 1). Each
# call appends its role, round, resumed thread, directory and arguments to
# $CODEX_HOME/calls.log for the tests.
#
# Usage: every turn reads 2000 input tokens, 1500 of them cached, and
# writes 150. turn.completed reports the thread's running total, as the
# real CLI does (it reads the thread's total token usage, restored on
# resume). The file $CODEX_HOME/print-thread-id makes it print that text as
# its thread_id.
#
# While the file $CODEX_HOME/quota-until holds a Unix time still to come,
# it refuses as codex does when the account's usage limit is spent: an
# error event and a turn.failed whose message is codex-rs's
# UsageLimitReachedError ("You've hit your usage limit. … try again at
# 4:05 PM.", the time in the CLI's local zone), status 1.
#
# The implementer's files (those its phase's prompt lists) are one
# file_change item, which codex prints only completed. The file
# $CODEX_HOME/read-only plays codex's own read-only sandbox: the patch is
# rejected (the item's status failed, the router's error on stderr), the
# agent says so and the turn completes, exit status 0.
set -eu
state=${CODEX_HOME:?CODEX_HOME is not set}
here=$(dirname "$0")
mkdir -p "$state/sessions"

json_string() {
	awk 'BEGIN { ORS = ""; print "\"" }
	NR > 1 { print "\\n" }
	{ gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); gsub(/\t/, "\\t"); gsub(/\r/, "\\r"); print }
	END { print "\"" }'
}

if [ "${1:-}" != exec ]; then
	echo "codex.sh: only codex exec is played" >&2
	exit 2
fi
shift
resume=""
json=no
args="[exec]"
while [ $# -gt 0 ]; do
	args="$args [$1]"
	case $1 in
	resume)
		resume=$2
		args="$args [$2]"
		shift
		;;
	--json) json=yes ;;
	esac
	shift
done
printf '%s %s resume=%s cwd=%s args=%s\n' "$FORGE_ROLE" "$FORGE_ROUND" "${resume:--}" "$(pwd -P)" "$args" >>"$state/calls.log"

if [ -f "$state/quota-until" ] && [ "$(cat "$state/quota-until")" -gt "$(date +%s)" ]; then
	msg="You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at $(date -d "@$(cat "$state/quota-until")" '+%-I:%M %p')."
	printf '{"type":"thread.started","thread_id":"%s"}\n{"type":"turn.started"}\n' "${resume:-$(cat /proc/sys/kernel/random/uuid)}"
	printf '{"type":"error","message":%s}\n' "$(printf '%s' "$msg" | json_string)"
	printf '{"type":"turn.failed","error":{"message":%s}}\n' "$(printf '%s' "$msg" | json_string)"
	exit 1
fi

if [ -n "$resume" ]; then
	if [ ! -f "$state/sessions/$resume.jsonl" ]; then
		echo "ERROR: No saved session found with ID $resume. Run \`codex resume\` without an ID to choose from existing sessions." >&2
		exit 1
	fi
	id=$resume
else
	id=$(cat /proc/sys/kernel/random/uuid)
fi
printf '%s %s\n' "$FORGE_ROLE" "$FORGE_ROUND" >>"$state/sessions/$id.jsonl"
turns=$(wc -l <"$state/sessions/$id.jsonl")

prompt=$(cat)
files=""
if [ "$FORGE_ROLE" = implementer ]; then
	files=$(printf '%s\n' "$prompt" | sed -n '/^Files of this phase:/,/^$/p' | sed -n 's/^- `\(.*\)`$/\1/p')
fi
status=completed
if [ -n "$files" ] && [ -f "$state/read-only" ]; then
	status=failed
	echo "$(date -u +%Y-%m-%dT%H:%M:%S.000000Z) ERROR codex_core::tools::router: error=patch rejected: writing is blocked by read-only sandbox; rejected by user approval settings" >&2
	answer="I couldn't apply the patch: writing is blocked by the read-only sandbox, so $(echo $files | tr '\n' ' ')was not created."
else
	answer=$(printf '%s\n' "$prompt" | "$here/$FORGE_ROLE.sh")
fi
if [ "$json" != yes ]; then
	printf '%s\n' "$answer"
	exit 0
fi
if [ -f "$state/print-thread-id" ]; then
	id=$(cat "$state/print-thread-id")
fi
printf '{"type":"thread.started","thread_id":%s}\n' "$(printf '%s' "$id" | json_string)"
printf '{"type":"turn.started"}\n'
printf '{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Reading the plan**"}}\n'
printf '{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}\n'
printf '{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"docs\\n","exit_code":0,"status":"completed"}}\n'
if [ -n "$files" ]; then
	changes=""
	for f in $files; do
		changes="${changes:+$changes,}$(printf '{"path":%s,"kind":"add"}' "$(printf '%s/%s' "$(pwd -P)" "$f" | json_string)")"
	done
	printf '{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[%s],"status":"%s"}}\n' "$changes" "$status"
fi
printf '{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":%s}}\n' "$(printf '%s' "$answer" | json_string)"
printf '{"type":"turn.completed","usage":{"input_tokens":%d,"cached_input_tokens":%d,"output_tokens":%d}}\n' \
	$((turns * 2000)) $((turns * 1500)) $((turns * 150))
