#!/usr/bin/env bash
# What `sam deploy` would upload, built with `sam build` as a user builds it,
# checked (one bootstrap per function, an ELF for the template's
# architecture, under the size docs/operating.md states, no newer glibc than
# the runtime's)
# and run: each built bootstrap, under qemu when this machine has another
# architecture, on one sample event against the local SQS
# (scripts/deploy_build.py says how).
#
#   scripts/deploy-build.sh          # ~13 min on a fresh 2-core machine
#
# Installs what it needs: aws-sam-cli, cargo-lambda (with zig) and pyelftools
# into .local/tools, the Rust target (rustup), qemu-user and the target's C
# library (apt-get, as root). CI_SKIP_DEPLOY_BUILD=1 skips it, saying so.
# Uses SQS_TEST_ENDPOINT when set, else starts scripts/local-sqs.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${CI_SKIP_DEPLOY_BUILD:-}" = 1 ]; then
  echo "deploy-build: skipped: CI_SKIP_DEPLOY_BUILD=1, so sam build and the built bootstraps were NOT checked"
  exit 0
fi
tools="$(scripts/install-tools.sh)"
# cargo-lambda runs `python3 -m ziglang`: the virtualenv's python3 comes first.
export PATH="$tools/bin:$PATH"
exec "$tools/bin/python" scripts/deploy_build.py
