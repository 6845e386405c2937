#!/usr/bin/env bash
# Run the README's "Running one function locally with cargo-lambda" commands
# (scripts/readme_cargo_lambda.py says how). Installs cargo-lambda into
# .local/tools (scripts/install-tools.sh) and starts the local SQS
# (LOCAL_SQS_PORT, as scripts/local-sqs.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
tools="$(scripts/install-tools.sh)"
# cargo-lambda runs `python3 -m ziglang`: the virtualenv's python3 comes first.
export PATH="$tools/bin:$PATH"
exec "$tools/bin/python" scripts/readme_cargo_lambda.py
