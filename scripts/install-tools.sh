#!/usr/bin/env bash
# Install (once) the template and deploy tools into .local/tools, a
# virtualenv (never the system Python): cfn-lint, aws-sam-cli, cargo-lambda
# (which brings the zig it cross-compiles with) and pyelftools (reads the
# built bootstraps). All from PyPI. Prints the virtualenv's path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/.local/tools"
if [ ! -x "$tools/bin/sam" ] || [ ! -x "$tools/bin/cfn-lint" ] || [ ! -x "$tools/bin/cargo-lambda" ] \
   || ! "$tools/bin/python" -c 'import elftools' 2>/dev/null; then
  mkdir -p "$root/.local"
  [ -x "$tools/bin/python" ] || python3 -m venv "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check \
    'cfn-lint==1.*' 'aws-sam-cli==1.*' 'cargo-lambda==1.*' 'pyelftools==0.*' >&2
fi
echo "$tools"
