#!/usr/bin/env bash
# Installs what CI needs beyond Go, each only when it is missing: Debian's
# chromium-headless-shell, for the web page's browser tests
# (examples/server TestWebPage…; the same engine as chromium, on less CPU),
# Debian's postgresql, whose initdb and pg_ctl the PostgreSQL tests
# (internal/pgtest) start a throwaway cluster with, and the chat servers
# the route adapters' tests start (ngircd, and inspircd with
# atheme-services for IRC accounts; prosody for XMPP).
set -euo pipefail
need=()
if ! command -v chromium-headless-shell >/dev/null 2>&1; then
  need+=(chromium-headless-shell)
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  need+=(postgresql)
fi
# ngircd, a real IRC server the IRC adapter's tests (route/irc) start.
if ! command -v ngircd >/dev/null 2>&1 && [ ! -x /usr/sbin/ngircd ]; then
  need+=(ngircd)
fi
# inspircd and atheme-services, an IRC server and the services that log
# people in to accounts on it, for the IRC adapter's accounts.
if ! command -v inspircd >/dev/null 2>&1 && [ ! -x /usr/sbin/inspircd ]; then
  need+=(inspircd)
fi
if ! command -v atheme-services >/dev/null 2>&1 && [ ! -x /usr/sbin/atheme-services ]; then
  need+=(atheme-services)
fi
# prosody, a real XMPP server the XMPP adapter's tests (route/xmpp) start.
if ! command -v prosody >/dev/null 2>&1; then
  need+=(prosody)
fi
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${need[@]}"
