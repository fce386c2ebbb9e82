#!/bin/sh
# Claude Code played by a script in Forge's tests (an exec runtime with
# output: claude-json). Run as `claude -p --output-format json`, with
# `--resume <session id>` to continue a session, it prints what the real CLI
# prints: one result message (docs: code.claude.com headless mode; the
# fields as anthropics/claude-agent-sdk-python's message_parser.py reads
# them). The answer is the role's own script in this directory.
#
# Its sessions live under CLAUDE_CONFIG_DIR as the real CLI's live under
# ~/.claude/projects/<its working directory, every other character a dash>:
# an id it does not have there is refused as the real CLI refuses it, even
# one begun in another directory ("No conversation found with session ID:
# …", status 1; anthropics/claude-code#5768). Each
# call appends its role, round, resumed session, directory and arguments to
# $CLAUDE_CONFIG_DIR/calls.log for the tests.
#
# Usage: a fresh session reads 5 + 1200 (cache written) input tokens, a
# resumed one 7 + 200 + 1200 (cache read); each writes 300 or 250 tokens and
# costs $0.0125 or $0.0065. total_cost_usd is the session's running total,
# as Claude Code reports it since 2.1.277 (a resumed process continues from
# the session's saved total), or the process's own spend when the file
# $CLAUDE_CONFIG_DIR/per-process-cost exists (earlier versions). The file
# $CLAUDE_CONFIG_DIR/print-session-id makes it print that text as its
# session_id.
#
# While the file $CLAUDE_CONFIG_DIR/quota-until holds a Unix time still to
# come, it refuses as Claude Code does when the account's limit is spent:
# with --output-format stream-json a rate_limit_event whose status is
# "rejected" and whose resetsAt is that time, then (with json too) a result
# with is_error true, api_error_status 429 and the "You've hit your session
# limit • resets …" text, having read 40 tokens and written 2; status 1.
#
# With `--output-format stream-json` (which, as the real CLI, it refuses
# without --verbose) it prints one message a line as the real CLI does:
# the system init message, the implementer's Write tool_use for each file
# of its phase, the tool_result, the answer as an assistant message, and
# the result message last. While the file $CLAUDE_CONFIG_DIR/hold exists
# the implementer waits after its first tool_use, so a test can look at a
# run in the middle. The file $CLAUDE_CONFIG_DIR/deny-writes plays the
# permission prompt no one answers in -p: the implementer writes nothing,
# each Write's tool_result is Claude Code's refusal and the result, still
# a success with is_error false and exit status 0, lists them in
# permission_denials.
set -eu
state=${CLAUDE_CONFIG_DIR:?CLAUDE_CONFIG_DIR is not set}
here=$(dirname "$0")
project="$state/projects/$(pwd -P | sed 's/[^A-Za-z0-9]/-/g')"
mkdir -p "$project"

json_string() {
	awk 'BEGIN { ORS = ""; print "\"" }
	NR > 1 { print "\\n" }
	{ gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); gsub(/\t/, "\\t"); gsub(/\r/, "\\r"); print }
	END { print "\"" }'
}

resume=""
format=text
verbose=no
args=""
while [ $# -gt 0 ]; do
	args="$args [$1]"
	case $1 in
	--resume | -r)
		resume=$2
		args="$args [$2]"
		shift
		;;
	--output-format) format=$2 ;;
	--verbose) verbose=yes ;;
	esac
	shift
done
printf '%s %s resume=%s cwd=%s args=%s\n' "$FORGE_ROLE" "$FORGE_ROUND" "${resume:--}" "$(pwd -P)" "$args" >>"$state/calls.log"

if [ "$format" = stream-json ] && [ "$verbose" != yes ]; then
	echo "Error: When using --print, --output-format=stream-json requires --verbose" >&2
	exit 1
fi
if [ -f "$state/quota-until" ] && [ "$(cat "$state/quota-until")" -gt "$(date +%s)" ]; then
	until=$(cat "$state/quota-until")
	if [ "$format" = stream-json ]; then
		printf '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":%s,"rateLimitType":"five_hour","overageStatus":"rejected","isUsingOverage":false}}\n' "$until"
	fi
	printf '{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"duration_ms":1204,"duration_api_ms":1100,"num_turns":1,"result":"You'"'"'ve hit your session limit · resets %s (UTC)","stop_reason":"stop_sequence","session_id":"%s","total_cost_usd":0.0002,"usage":{"input_tokens":40,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}\n' \
		"$(date -u -d "@$until" +%-I:%M%P)" "$(cat /proc/sys/kernel/random/uuid)"
	exit 1
fi

if [ -n "$resume" ]; then
	if [ ! -f "$project/$resume.jsonl" ]; then
		echo "No conversation found with session ID: $resume" >&2
		exit 1
	fi
	id=$resume
	usage='"input_tokens":7,"cache_creation_input_tokens":200,"cache_read_input_tokens":1200,"output_tokens":250'
	call=6500 # millionths of a dollar
else
	id=$(cat /proc/sys/kernel/random/uuid)
	usage='"input_tokens":5,"cache_creation_input_tokens":1200,"cache_read_input_tokens":0,"output_tokens":300'
	call=12500
fi
spent=0
if [ -f "$project/$id.cost" ]; then
	spent=$(cat "$project/$id.cost")
fi
spent=$((spent + call))
echo "$spent" >"$project/$id.cost"
printf '%s %s\n' "$FORGE_ROLE" "$FORGE_ROUND" >>"$project/$id.jsonl"
turns=$(wc -l <"$project/$id.jsonl")
reported=$spent
if [ -f "$state/per-process-cost" ]; then
	reported=$call
fi

prompt=$(cat)
if [ -f "$state/print-session-id" ]; then
	id=$(cat "$state/print-session-id")
fi
sid=$(printf '%s' "$id" | json_string)
message() { # role, content: one stream-json message
	if [ "$1" = user ]; then
		printf '{"type":"user","message":{"role":"user","content":[%s]},"parent_tool_use_id":null,"session_id":%s,"uuid":"%s"}\n' \
			"$2" "$sid" "$(cat /proc/sys/kernel/random/uuid)"
		return
	fi
	printf '{"type":"assistant","message":{"id":"msg_%s","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[%s],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":1200,"output_tokens":40}},"parent_tool_use_id":null,"session_id":%s,"uuid":"%s"}\n' \
		"$(cat /proc/sys/kernel/random/uuid | tr -d -)" "$2" "$sid" "$(cat /proc/sys/kernel/random/uuid)"
}
stream() { [ "$format" = stream-json ]; }

# The implementer's files: those its phase's prompt lists.
files=""
if [ "$FORGE_ROLE" = implementer ]; then
	files=$(printf '%s\n' "$prompt" | sed -n '/^Files of this phase:/,/^$/p' | sed -n 's/^- `\(.*\)`$/\1/p')
fi
if stream; then
	printf '{"type":"system","subtype":"init","cwd":%s,"session_id":%s,"tools":["Bash","Edit","Glob","Grep","Read","Write"],"mcp_servers":[],"model":"claude-sonnet-4-5","permissionMode":"default","slash_commands":[],"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.337","output_style":"default","agents":[],"skills":[],"plugins":[],"uuid":"%s"}\n' \
		"$(pwd -P | json_string)" "$sid" "$(cat /proc/sys/kernel/random/uuid)"
fi
n=0
for f in $files; do
	n=$((n + 1))
	abs=$(printf '%s/%s' "$(pwd -P)" "$f" | json_string)
	if stream; then
		message assistant "$(printf '{"type":"tool_use","id":"toolu_0%d","name":"Write","input":{"file_path":%s,"content":"# %s\\n"}}' "$n" "$abs" "$f")"
	fi
	while [ -f "$state/hold" ]; do sleep 0.05; done
done
denials=""
if [ -n "$files" ] && [ -f "$state/deny-writes" ]; then
	n=0
	for f in $files; do
		n=$((n + 1))
		abs=$(printf '%s/%s' "$(pwd -P)" "$f" | json_string)
		denial=$(printf '{"tool_name":"Write","tool_use_id":"toolu_0%d","tool_input":{"file_path":%s,"content":"# %s\\n"}}' "$n" "$abs" "$f")
		denials="${denials:+$denials,}$denial"
		if stream; then
			message user "$(printf '{"type":"tool_result","content":"Claude requested permissions to write to %s, but you haven'"'"'t granted it yet.","is_error":true,"tool_use_id":"toolu_0%d"}' "$(pwd -P)/$f" "$n")"
		fi
	done
	answer="I wasn't able to write $(echo $files | tr '\n' ' '): permission to write was not granted. Please grant write permission and I'll create them."
else
	answer=$(printf '%s\n' "$prompt" | "$here/$FORGE_ROLE.sh")
	n=0
	for f in $files; do
		n=$((n + 1))
		if stream; then
			message user "$(printf '{"type":"tool_result","content":"File created successfully at: %s","tool_use_id":"toolu_0%d"}' "$(pwd -P)/$f" "$n")"
		fi
	done
fi
if [ "$format" = text ]; then
	printf '%s\n' "$answer"
	exit 0
fi
if stream; then
	message assistant "$(printf '{"type":"text","text":%s}' "$(printf '%s' "$answer" | json_string)")"
fi
printf '{"type":"result","subtype":"success","is_error":false,"duration_ms":2310,"duration_api_ms":2104,"num_turns":%d,"result":%s,"stop_reason":"end_turn","session_id":%s,"total_cost_usd":%s,"usage":{%s,"server_tool_use":{"web_search_requests":0},"service_tier":"standard"},"modelUsage":{},"permission_denials":[%s],"uuid":"%s"}\n' \
	"$turns" "$(printf '%s' "$answer" | json_string)" "$sid" \
	"$(awk -v m="$reported" 'BEGIN { printf "%.6f", m / 1000000 }')" "$usage" "$denials" "$(cat /proc/sys/kernel/random/uuid)"
