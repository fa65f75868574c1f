#!/usr/bin/env bash
# Runs the SIGKILL detection test of troupe-remote N times (default 20):
# each run starts a nats-server, a node process with an echo actor, and a
# watcher node here; SIGKILLs the process and measures the time to the
# watcher's Terminated (heartbeat timeout 1.5 s, contract: within the
# timeout plus 1 s). Prints every run's figures and a summary; exits non-zero
# if any run failed.
set -euo pipefail
runs="${1:-20}"
cd "$(dirname "$0")/.."
cargo test -q -p troupe-remote --test processes --no-run 2>/dev/null
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
failed=0
for i in $(seq 1 "$runs"); do
  if cargo test -q -p troupe-remote --test processes a_sigkilled_node_process_is_declared_down \
      -- --nocapture >"$log" 2>&1; then
    line="$(grep 'SIGKILL to Down' "$log" || true)"
    echo "run $i: ${line:-no timing line}"
  else
    failed=$((failed + 1))
    echo "run $i: FAILED"
    grep -E "panicked|Terminated after" "$log" || tail -5 "$log"
  fi
done
echo "$runs runs, $failed failed"
[ "$failed" -eq 0 ]
