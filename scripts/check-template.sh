#!/usr/bin/env bash
# Check template.yaml: cfn-lint, sam validate --lint, and the project's own
# checks (scripts/check_template.py). Installs cfn-lint and aws-sam-cli (PyPI)
# into .local/tools on first use (scripts/install-tools.sh). All of it works
# offline.
set -euo pipefail
cd "$(dirname "$0")/.."
tools="$(scripts/install-tools.sh)"
echo "-- cfn-lint template.yaml"
"$tools/bin/cfn-lint" template.yaml
echo "-- sam validate --lint"
AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" SAM_CLI_TELEMETRY=0 \
  "$tools/bin/sam" validate --lint -t template.yaml
echo "-- scripts/check_template.py"
"$tools/bin/python" scripts/check_template.py
