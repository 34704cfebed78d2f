#!/usr/bin/env bash
# Vendors the web page's two libraries from npm into web/assets/vendor/:
# marked (markdown to HTML) and DOMPurify (the sanitizer every rendered
# message goes through), as the ES modules their packages ship, unchanged.
# It writes web/assets/vendor/VENDOR, which web's TestVendoredLibrariesAreCurrent
# checks against the versions pinned here and the files' bytes: bump a
# version here, run this script, commit the result.
#
#   scripts/web-vendor.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# The pinned versions; the test reads these two lines.
MARKED_VERSION=18.2.1
DOMPURIFY_VERSION=3.5.0

out=web/assets/vendor
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "marked@$MARKED_VERSION" "dompurify@$DOMPURIFY_VERSION" >/dev/null)
mkdir -p "$tmp/marked" "$tmp/dompurify" "$out"
tar xzf "$tmp/marked-$MARKED_VERSION.tgz" -C "$tmp/marked"
tar xzf "$tmp/dompurify-$DOMPURIFY_VERSION.tgz" -C "$tmp/dompurify"

cp "$tmp/marked/package/lib/marked.esm.js" "$out/marked.esm.js"
cp "$tmp/marked/package/LICENSE" "$out/marked.LICENSE"
cp "$tmp/dompurify/package/dist/purify.es.mjs" "$out/purify.es.mjs"
cp "$tmp/dompurify/package/LICENSE" "$out/purify.LICENSE"

{
  echo "# Written by scripts/web-vendor.sh; do not edit."
  echo "marked $MARKED_VERSION"
  echo "dompurify $DOMPURIFY_VERSION"
  (cd "$out" && sha256sum marked.esm.js marked.LICENSE purify.es.mjs purify.LICENSE)
} > "$out/VENDOR"
echo "vendored marked $MARKED_VERSION and dompurify $DOMPURIFY_VERSION into $out"
