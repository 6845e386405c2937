#!/usr/bin/env bash
# The fault-injection soak (bench/soak.sh; see bench/soak.md).
#   scripts/soak.sh            # 100,000 records per function and queue, 30% faults
#   scripts/soak.sh --smoke    # 2,000 records, debug builds (CI)
exec "$(dirname "$0")/../bench/soak.sh" "$@"
