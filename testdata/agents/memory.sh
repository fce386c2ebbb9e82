#!/bin/sh
# Memory agent played by a script in Forge's tests (exec runtime): it reads
# the plan, its reviews and its diff, and learns nothing from them. Tests of
# memory give the role a script of their own that learns facts.
set -eu
cat >/dev/null # the prompt; read it so Forge's write never meets a closed pipe
echo '{"facts": []}'
