#!/bin/sh
# install-agents.sh DIR installs the three real ACP agents the README names
# (Claude Code's and Codex's ACP adapters, and Gemini CLI) from npm into DIR,
# with the Codex CLI, whose `codex login` signs Codex in (-login codex), and
# prints the PATH entry their commands are in. Nothing is installed
# globally; remove DIR to remove them. The tests never need them.
#
#	scripts/install-agents.sh /tmp/agents
#	PATH=/tmp/agents/node_modules/.bin:$PATH go run ./examples/server -check-agents
set -eu
if [ $# -ne 1 ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
dir=$1
mkdir -p "$dir"
npm install --prefix "$dir" --no-fund --no-audit \
	@zed-industries/claude-code-acp@0.16.2 \
	@zed-industries/codex-acp@0.16.0 \
	@google/gemini-cli@0.61.0 \
	@openai/codex@0.171.0 >&2
bin=$(cd "$dir" && pwd)/node_modules/.bin
for c in claude-code-acp codex-acp gemini codex; do
	if [ ! -x "$bin/$c" ]; then
		echo "$0: $c is not in $bin after the install" >&2
		exit 1
	fi
done
echo "$bin"
