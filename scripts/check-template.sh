#!/usr/bin/env bash
# Check template.yaml: cfn-lint, sam validate --lint, and the project's own
# checks (scripts/check_template.py, which also runs checkov). Installs
# cfn-lint and aws-sam-cli (PyPI) into .local/tools (scripts/install-tools.sh)
# and checkov into .local/checkov (a virtualenv of its own: its pins differ
# from SAM's) on first use. All of it works offline once installed.
set -euo pipefail
cd "$(dirname "$0")/.."
tools="$(scripts/install-tools.sh)"
if [ ! -x .local/checkov/bin/checkov ]; then
  mkdir -p .local
  python3 -m venv .local/checkov
  .local/checkov/bin/pip install --quiet --disable-pip-version-check 'checkov==3.*' >&2
fi
echo "-- cfn-lint template.yaml"
"$tools/bin/cfn-lint" template.yaml
echo "-- sam validate --lint"
AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" SAM_CLI_TELEMETRY=0 \
  "$tools/bin/sam" validate --lint -t template.yaml
echo "-- scripts/check_template.py (with checkov)"
"$tools/bin/python" scripts/check_template.py
