#!/usr/bin/env bash
# Kills a group-commit journal writer with SIGKILL at random points ROUNDS
# times (default 200) and checks after each round that every acknowledged
# record survived and the journal still opens and appends. CI runs the same
# test with 30 rounds as part of `cargo test`.
#
#   scripts/journal_crash_loop.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-200}"
TROUPE_JOURNAL_CRASH_ITERS="$rounds" cargo test --release -q -p troupe-journal \
    --test crash_kill -- --nocapture kill_9 2>&1 | grep -E "crash test|panicked|test result"
