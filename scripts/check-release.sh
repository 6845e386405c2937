#!/usr/bin/env bash
# Check a release folder written by scripts/release.sh (scripts/check_release.py
# says what): checksums, each zip's binary (ELF header, mode), the arm64
# bootstraps run under qemu against the local SQS, the packaged template
# (cfn-lint, sam package to the local S3, SAM's translator), the SAR's
# requirements, and that the same binaries give the same bytes.
#
#   scripts/check-release.sh dist
#
# Installs what it needs as scripts/deploy-build.sh does (cfn-lint,
# aws-sam-cli into .local/tools; qemu-user as root). Uses SQS_TEST_ENDPOINT
# when set, else starts scripts/local-sqs.sh (moto: SQS and S3).
set -euo pipefail
cd "$(dirname "$0")/.."
tools="$(scripts/install-tools.sh)"
export PATH="$tools/bin:$PATH"
exec "$tools/bin/python" scripts/check_release.py "$@"
