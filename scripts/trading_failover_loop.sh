#!/usr/bin/env bash
# Runs the distributed trading system N times (default 10) with the
# primaries' process SIGKILLed mid-load and a fresh engine node joining
# after it (`trading cluster --kill-at-acked ... --restart-killed`), each
# run checking itself: every acknowledged order in the surviving
# primaries' logs exactly once, nothing applied twice, books equal to a
# replay of the log, the fresh standby equal to its primary. Prints every
# run's figures and a summary (failover time from the SIGKILL to the new
# primary's first order: median and max over all engines and runs); exits
# non-zero if any run failed. Extra arguments go to `trading cluster`.
set -euo pipefail
runs="${1:-10}"
shift || true
# shellcheck source=scripts/trading_loop_common.sh
source "$(dirname "$0")/trading_loop_common.sh"
failed=0
for i in $(seq 1 "$runs"); do
  # The kill lands once 10 to 79% of the orders are acknowledged: tied to
  # the load's progress, so that a fast host cannot finish first.
  kill_pct=$((10 + (i * 37) % 70))
  if "$trading" cluster --clients 10 --orders 20000 --txlog buffered \
      --retry-ms 300 --kill-at-acked "$kill_pct" --restart-killed \
      --json "$dir/run-$i.json" "$@" >"$dir/run-$i.log" 2>&1; then
    echo "run $i (kill at $kill_pct% acknowledged): $(grep -E '^failover' "$dir/run-$i.log" || echo 'no failover line')"
  else
    failed=$((failed + 1))
    echo "run $i (kill at $kill_pct% acknowledged): FAILED"
    tail -8 "$dir/run-$i.log"
  fi
done
python3 - "$dir" "$runs" <<'PY'
import glob, json, statistics, sys
outcomes = [json.load(open(p)) for p in glob.glob(sys.argv[1] + "/run-*.json")]
failover = sorted(f for o in outcomes for f in o["failover_ms"])
twice = sum(o["applied_twice"] for o in outcomes)
missing = sum(o["acked_missing"] for o in outcomes)
acked = sum(r["acked"] for o in outcomes for r in o["rounds"])
retries = sum(r["retries"] for o in outcomes for r in o["rounds"])
print(f"{len(outcomes)} of {sys.argv[2]} runs checked: {acked} orders acknowledged, "
      f"{retries} retries, {twice} applied twice, {missing} acknowledged but missing")
if failover:
    print(f"failover over {len(failover)} engine takeovers: median {statistics.median(failover):.0f} ms, "
          f"max {failover[-1]:.0f} ms")
PY
echo "$runs runs, $failed failed"
[ "$failed" -eq 0 ]
