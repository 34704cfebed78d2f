#!/usr/bin/env bash
# Installs what CI needs beyond Go: Debian's chromium, for the web page's
# browser tests (examples/server TestWebPage…), only when it is missing.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends chromium
