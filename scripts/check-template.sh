#!/usr/bin/env bash
# Check template.yaml: cfn-lint, sam validate --lint, and the project's own
# checks (scripts/check_template.py, which also runs checkov). Installs
# cfn-lint and aws-sam-cli (PyPI) into .local/tools (scripts/install-tools.sh)
# and checkov into .local/checkov (a virtualenv of its own: its pins differ
# from SAM's) on first use, and asl-validator (npm, the Amazon States
# Language validator the Distributed Map's definition is checked with) into
# .local/asl-validator. All of it works offline once installed.
set -euo pipefail
cd "$(dirname "$0")/.."
tools="$(scripts/install-tools.sh)"
if [ ! -x .local/checkov/bin/checkov ]; then
  mkdir -p .local
  python3 -m venv .local/checkov
  .local/checkov/bin/pip install --quiet --disable-pip-version-check 'checkov==3.*' >&2
fi
if [ ! -x .local/asl-validator/node_modules/.bin/asl-validator ]; then
  mkdir -p .local/asl-validator
  npm install --silent --no-audit --no-fund --prefix .local/asl-validator asl-validator@4.0.0 >&2
fi
echo "-- cfn-lint template.yaml"
"$tools/bin/cfn-lint" template.yaml
echo "-- sam validate --lint"
AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" SAM_CLI_TELEMETRY=0 \
  "$tools/bin/sam" validate --lint -t template.yaml
echo "-- scripts/check_template.py (with checkov)"
"$tools/bin/python" scripts/check_template.py
