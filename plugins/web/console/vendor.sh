#!/usr/bin/env bash
# Refresh the vendored browser libraries in src/faregate_web/static/vendor from the npm
# registry (a maintainer's step, never run at install or start time; needs npm). Files are
# copied unchanged; update the versions here and in vendor/LICENSES.md together.
set -euo pipefail
cd "$(dirname "$0")"
out=src/faregate_web/static/vendor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent preact@10.29.8 htm@3.1.1 preact-iso@2.12.2 marked@18.2.1 dompurify@3.4.18 uplot@1.6.32 >/dev/null)
for f in "$work"/*.tgz; do mkdir -p "${f%.tgz}" && tar xzf "$f" -C "${f%.tgz}"; done
cp "$work"/preact-10.29.8/package/dist/preact.module.js "$out"/preact.module.js
cp "$work"/preact-10.29.8/package/hooks/dist/hooks.module.js "$out"/preact-hooks.module.js
cp "$work"/htm-3.1.1/package/dist/htm.module.js "$out"/htm.module.js
cp "$work"/preact-iso-2.12.2/package/src/router.js "$out"/preact-iso-router.js
cp "$work"/preact-iso-2.12.2/package/src/lazy.js "$out"/preact-iso-lazy.js
cp "$work"/marked-18.2.1/package/lib/marked.esm.js "$out"/marked.esm.js
cp "$work"/dompurify-3.4.18/package/dist/purify.es.mjs "$out"/purify.es.mjs
cp "$work"/uplot-1.6.32/package/dist/uPlot.esm.js "$out"/uPlot.esm.js
cp "$work"/uplot-1.6.32/package/dist/uPlot.min.css "$out"/uPlot.min.css
echo "vendored into $out"
