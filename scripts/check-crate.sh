#!/usr/bin/env bash
# Check the shared crate as crates.io and its users get it
# (scripts/check_crate.py says what): cargo publish --dry-run, the
# package's files and metadata, the core without features, and
# examples/crate-user built on the packed files and sending through the
# local SQS. Builds in target/crate-check. Uses SQS_TEST_ENDPOINT when set,
# else starts scripts/local-sqs.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
tools="$(scripts/install-tools.sh)"
exec "$tools/bin/python" scripts/check_crate.py "$@"
