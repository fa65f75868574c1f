#!/usr/bin/env bash
# Kills a node of the cluster application N times (default 20) mid-run:
# `troupe-bench cluster-app --filter jetstream-kill --kills N+1` (the first
# kill is the row's warm-up), each kill in a fresh cluster of three node
# processes on one nats-server, 1,000 persistent ledgers on the JetStream
# journal, 256 commands in flight, the victim rotating over the three nodes
# (the shard coordinator's among them). Every command is retried until
# acknowledged and every ledger read back after each kill: a command lost
# or held twice fails the run (exit non-zero). Prints each kill's outage
# (from the SIGKILL until every ledger answered again) and the summary
# row. Set TROUPE_BENCH to a built binary to skip the cargo build (CI
# does); extra arguments go to the bench (e.g. --quick for small sizes).
set -euo pipefail
cd "$(dirname "$0")/.."
kills="${1:-20}"
shift || true
bench="${TROUPE_BENCH:-}"
if [ -z "$bench" ]; then
  cargo build -q --release -p troupe-bench
  bench=target/release/troupe-bench
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
"$bench" cluster-app --filter jetstream-kill --kills "$((kills + 1))" "$@" >"$log" 2>&1 || status=$?
# Each kill's line, the row, and any error (the whole log on a failure).
grep -E "^cluster-app: kill|^jetstream-kill|error" "$log" || true
if [ "$status" -ne 0 ]; then
  tail -n 40 "$log"
  echo "cluster-app kill loop: FAILED (exit $status)"
fi
exit "$status"
