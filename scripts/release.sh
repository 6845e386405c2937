#!/usr/bin/env bash
# Build a release: the four functions' bootstrap.zip and the replay command
# for arm64 (and x86_64 with --x86_64), the packaged template that deploys
# them without a build step, SHA256SUMS, and one archive of it all
# (scripts/release.py says what and how; docs/releasing.md how to publish).
#
#   scripts/release.sh 0.1.0                 # into dist/
#   scripts/release.sh 0.1.0 --x86_64        # both architectures
#   scripts/release.sh 0.1.0 --out DIR       # elsewhere
#   scripts/release.sh 0.1.0 --allow-dirty   # from a checkout with changes
#   scripts/release.sh 0.1.0 --no-replay     # without the replay command
#
# VERSION must be the project's version (Cargo.toml, the template's
# SemanticVersion, a CHANGELOG.md section). Installs what it needs as
# scripts/deploy-build.sh does: cargo-lambda (with zig) into .local/tools,
# the Rust targets (rustup). Check the result with scripts/check-release.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
tools="$(scripts/install-tools.sh)"
# cargo-lambda runs `python3 -m ziglang`: the virtualenv's python3 comes first.
export PATH="$tools/bin:$PATH"
exec "$tools/bin/python" scripts/release.py "$@"
