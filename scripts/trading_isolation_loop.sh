#!/usr/bin/env bash
# Usage: trading_isolation_loop.sh pause|partition [N] [trading cluster args]
#
# Runs the distributed trading system N times (default 10) with the
# primaries' node isolated mid-load, once a share of the orders is
# acknowledged, for 3 s (three times the 1 s heartbeat timeout):
#   pause      SIGSTOP, then SIGCONT (`--pause-primary-ms`);
#   partition  its network namespace's link taken down, then up again
#              (`--partition-primary-ms`; the engine nodes run in network
#              namespaces of their own: needs root and iproute2).
# Each run checks itself: the standbys took the leases over, the isolated
# node ended by itself once it could see that (fail-stop, recorded and left
# out of the checks), every acknowledged order in the surviving primaries'
# logs exactly once, nothing applied twice, books equal to a replay of the
# log. Prints every run's figures and a summary (failover time from the
# fault to the new primary's first order: median and max over all engines
# and runs); exits non-zero if any run failed, or if a run's isolated node
# did not fail-stop. Extra arguments go to `trading cluster` (say,
# `--pause-primary-ms 1100` for a pause just past the timeout).
set -euo pipefail
fault="${1:-}"
case "$fault" in
  pause) flag=--pause-primary-ms ;;
  partition) flag=--partition-primary-ms ;;
  *) echo "usage: $0 pause|partition [runs] [trading cluster args]" >&2; exit 2 ;;
esac
shift
runs="${1:-10}"
shift || true
# shellcheck source=scripts/trading_loop_common.sh
source "$(dirname "$0")/trading_loop_common.sh"
failed=0
for i in $(seq 1 "$runs"); do
  # The fault lands once 10 to 79% of the orders are acknowledged.
  pct=$((10 + (i * 37) % 70))
  if "$trading" cluster --clients 10 --orders 20000 --txlog buffered \
      --retry-ms 300 --kill-at-acked "$pct" "$flag" 3000 \
      --json "$dir/run-$i.json" "$@" >"$dir/run-$i.log" 2>&1; then
    echo "run $i ($fault at $pct% acknowledged): $(grep -E '^failover' "$dir/run-$i.log" || echo 'no failover line')"
  else
    failed=$((failed + 1))
    echo "run $i ($fault at $pct% acknowledged): FAILED"
    tail -8 "$dir/run-$i.log"
  fi
done
python3 - "$dir" "$runs" "$fault" <<'PY' || failed=$((failed + 1))
import glob, json, statistics, sys
outcomes = [json.load(open(p)) for p in glob.glob(sys.argv[1] + "/run-*.json")]
failover = sorted(f for o in outcomes for f in o["failover_ms"])
twice = sum(o["applied_twice"] for o in outcomes)
missing = sum(o["acked_missing"] for o in outcomes)
acked = sum(r["acked"] for o in outcomes for r in o["rounds"])
retries = sum(r["retries"] for o in outcomes for r in o["rounds"])
stopped = sum(1 for o in outcomes if o["fail_stopped"])
print(f"{len(outcomes)} of {sys.argv[2]} runs checked: {acked} orders acknowledged, "
      f"{retries} retries, {twice} applied twice, {missing} acknowledged but missing; "
      f"the {'paused' if sys.argv[3] == 'pause' else 'cut-off'} node fail-stopped in "
      f"{stopped} of {len(outcomes)}")
if failover:
    print(f"failover over {len(failover)} engine takeovers: median {statistics.median(failover):.0f} ms, "
          f"max {failover[-1]:.0f} ms")
# Isolated past the heartbeat timeout, a node that lived on did not
# exercise the fail-stop: count the run as failed.
sys.exit(0 if stopped == len(outcomes) else 1)
PY
echo "$runs runs, $failed failed"
[ "$failed" -eq 0 ]
