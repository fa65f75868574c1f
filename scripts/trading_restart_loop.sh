#!/usr/bin/env bash
# Runs the distributed trading system N times (default 10) with a
# whole-cluster restart mid-load (`trading cluster --kill-at-acked ...
# --restart-all`: every engine node SIGKILLed at once once a share of the
# orders is acknowledged, then started again under its name from its log),
# alternating request-reply and one-way, buffered and group-commit logs,
# orders that leave the books empty or resting, and engines that restart
# from a snapshot (one every 500 events) or, with the default interval,
# from their whole log.
# Each run checks itself: every acknowledged order in the primaries' logs
# exactly once, nothing applied twice, books equal to a replay of the log,
# every engine with its primary and standby again. Prints every run's
# figures and a summary, with the longest any order waited (its client
# retries every 300 ms, so this bounds the time the cluster was not
# serving, plus up to one retry interval); exits non-zero if any run
# failed. Extra arguments go to `trading cluster`.
set -euo pipefail
runs="${1:-10}"
shift || true
# shellcheck source=scripts/trading_loop_common.sh
source "$(dirname "$0")/trading_loop_common.sh"
failed=0
for i in $(seq 1 "$runs"); do
  # The restart lands once 10 to 79% of the orders are acknowledged.
  pct=$((10 + (i * 37) % 70))
  variant=request-reply
  [ $((i % 2)) -eq 0 ] && variant=one-way
  txlog=buffered
  [ $((i % 4)) -ge 2 ] && txlog=group-commit
  scenario=seed
  [ $((i % 3)) -eq 0 ] && scenario=resting
  snapshots=500
  [ $((i % 8)) -ge 4 ] && snapshots=100000
  if "$trading" cluster --clients 10 --orders 20000 --variant "$variant" \
      --txlog "$txlog" --scenario "$scenario" --snapshot-every "$snapshots" \
      --retry-ms 300 --kill-at-acked "$pct" --restart-all \
      --json "$dir/run-$i.json" "$@" >"$dir/run-$i.log" 2>&1; then
    echo "run $i ($variant, $txlog, $scenario, snapshot every $snapshots, restart at $pct% acknowledged): $(grep -E 'acknowledged in' "$dir/run-$i.log" || echo 'no summary line')"
  else
    failed=$((failed + 1))
    echo "run $i ($variant, $txlog, $scenario, snapshot every $snapshots, restart at $pct% acknowledged): FAILED"
    tail -8 "$dir/run-$i.log"
  fi
done
python3 - "$dir" "$runs" <<'PY' || failed=$((failed + 1))
import glob, json, statistics, sys
outcomes = [json.load(open(p)) for p in glob.glob(sys.argv[1] + "/run-*.json")]
twice = sum(o["applied_twice"] for o in outcomes)
missing = sum(o["acked_missing"] for o in outcomes)
acked = sum(r["acked"] for o in outcomes for r in o["rounds"])
retries = sum(r["retries"] for o in outcomes for r in o["rounds"])
problems = sum(len(o["problems"]) for o in outcomes)
waits = sorted(max(r["latency_us"]) / 1000 for o in outcomes for r in o["rounds"])
print(f"{len(outcomes)} of {sys.argv[2]} runs checked: {acked} orders acknowledged, "
      f"{retries} retries, {twice} applied twice, {missing} acknowledged but missing, "
      f"{problems} problems")
if waits:
    print(f"longest wait of an order per run: median {statistics.median(waits):.0f} ms, "
          f"max {waits[-1]:.0f} ms")
# How the restarted primaries recovered: from a snapshot, and how long
# opening and replaying their logs took.
primaries = [e["report"] for o in outcomes for e in o["engines"]
             if e["report"]["role"] == "primary" and e["report"]["orders"] > 0]
if primaries:
    from_snapshot = sum(1 for r in primaries if r["recovery"]["snapshot_seq_nr"] > 0)
    ms = sorted(r["recovery"]["micros"] / 1000 for r in primaries)
    print(f"busy primaries: {len(primaries)}, {from_snapshot} restarted from a snapshot; "
          f"log recovery median {statistics.median(ms):.1f} ms, max {ms[-1]:.1f} ms")
sys.exit(0 if twice == missing == problems == 0 else 1)
PY
echo "$runs runs, $failed failed"
[ "$failed" -eq 0 ]
