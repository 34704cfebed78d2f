#!/usr/bin/env bash
# Runs the reference server routed to the local IRC server of
# examples/irc/ngircd.conf (start it first): the bot "helper" answers the
# direct messages of the IRC nick "me", who is the person "me" of a users
# file this script writes. Everything lives in one folder (default
# ${TMPDIR:-/tmp}/bots-irc-demo), made at the first run and kept.
#
#   ngircd --nodaemon --config examples/irc/ngircd.conf
#   scripts/irc-demo.sh            (then, in an IRC client on 127.0.0.1:6667
#                                   as "me": /msg helper hello)
#
# BOTS_IRC_DEMO_DIR names another folder; BOTS_IRC_DEMO_PRINT=1 writes the
# folder and prints the server's command instead of running it.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BOTS_IRC_DEMO_DIR:-${TMPDIR:-/tmp}/bots-irc-demo}
server=${BOTS_IRC_DEMO_SERVER:-127.0.0.1:6667}
mkdir -p "$dir/config/routes" "$dir/config/bots/helper" "$dir/bots"
chmod 700 "$dir" "$dir/config"
if [ ! -f "$dir/users.json" ]; then
  token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
  umask 077
  cat > "$dir/users.json" <<JSON
{"users": [{"id": "me", "token": "$token", "grants": ["bot:put", "session:create"], "identities": ["irc:me"]}]}
JSON
fi
cat > "$dir/config/connections.json" <<JSON
{"connections": [{"id": "local", "network": "irc", "enabled": true,
  "settings": {"server": "$server", "nick": "helper", "tls": "false", "channels": "#bots"}}]}
JSON
cat > "$dir/config/routes/helper-dm.json" <<JSON
{"id": "helper-dm", "name": "Helper on the local IRC server", "enabled": true, "connection": "local",
 "bot": "helper", "scope": {"kind": "direct"}}
JSON
if [ ! -f "$dir/config/bots/helper/bot.md" ]; then
  cat > "$dir/config/bots/helper/bot.md" <<MD
---
name: Helper
description: Answers you on IRC.
owner: user:me
workspace: $dir/bots/helper
---
MD
fi
cmd=(go run ./examples/server -config "$dir/config" -root "$dir/bots" -users "$dir/users.json")
if [ "${BOTS_IRC_DEMO_PRINT:-}" = 1 ]; then
  printf '%q ' "${cmd[@]}"; echo
  exit 0
fi
echo "in an IRC client on $server as \"me\": /msg helper hello"
exec "${cmd[@]}"
