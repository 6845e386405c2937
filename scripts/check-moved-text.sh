#!/usr/bin/env bash
# Moved, not lost: every paragraph, list item, heading, table row and code
# line of old Markdown pages (REV:PATH, or --old-file FILE) is still in the
# project's Markdown files; see scripts/check_moved_text.py. Python 3's
# standard library only.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/check_moved_text.py "$@"
