#!/usr/bin/env bash
# Runs the distributed trading system N times (default 20) with its NATS
# server SIGKILLed mid-load and started again on the same port and store
# (`trading cluster --kill-at-acked ... --broker-outage-ms MS`) after 0,
# 300, 1000 and 3000 ms, cycling from 1000 (so that a single run, as in
# CI, is an outage longer than the 1 s heartbeat timeout), in request-reply
# and one-way (each outage both ways every 8 runs). No node is killed:
# every node must reconnect and go on. Each run checks itself: every acknowledged order in
# the primaries' logs exactly once, nothing applied twice, books equal to a
# replay of the log, every engine with its primary and its standby, the
# standby equal to its primary, no node ended on its own, no standby took
# over. A run that does not end within 240 s is stopped and fails (a hang).
# Prints every run's figures and a summary (the longest any order waited
# per run, the replication gaps the standbys filled); exits non-zero if
# any run failed. Extra arguments go to `trading cluster`.
set -euo pipefail
runs="${1:-20}"
shift || true
# shellcheck source=scripts/trading_loop_common.sh
source "$(dirname "$0")/trading_loop_common.sh"
outages=(1000 3000 0 300)
failed=0
for i in $(seq 1 "$runs"); do
  # The restart lands once 10 to 79% of the orders are acknowledged.
  pct=$((10 + (i * 37) % 70))
  outage=${outages[$(((i - 1) % 4))]}
  variant=request-reply
  [ $(((i - 1) % 8)) -ge 4 ] && variant=one-way
  what="run $i ($variant, nats-server down ${outage} ms at $pct% acknowledged)"
  # On a hang, SIGTERM (the launcher tells every node to leave and exits
  # with an error), and SIGKILL 30 s later if it has not.
  rc=0
  timeout -k 30 240 "$trading" cluster --clients 10 --orders 20000 \
    --variant "$variant" --txlog buffered --retry-ms 300 \
    --kill-at-acked "$pct" --broker-outage-ms "$outage" \
    --json "$dir/run-$i.json" "$@" >"$dir/run-$i.log" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "$what: $(grep -E 'acknowledged in' "$dir/run-$i.log" || echo 'no summary line')"
  else
    failed=$((failed + 1))
    hang=""
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      hang=": a hang, stopped after 240 s"
    fi
    echo "$what: FAILED (exit $rc$hang)"
    tail -8 "$dir/run-$i.log"
  fi
done
python3 - "$dir" "$runs" <<'PY' || failed=$((failed + 1))
import glob, json, statistics, sys
outcomes = [json.load(open(p)) for p in glob.glob(sys.argv[1] + "/run-*.json")]
twice = sum(o["applied_twice"] for o in outcomes)
missing = sum(o["acked_missing"] for o in outcomes)
acked = sum(r["acked"] for o in outcomes for r in o["rounds"])
given_up = sum(len(r["given_up"]) for o in outcomes for r in o["rounds"])
retries = sum(r["retries"] for o in outcomes for r in o["rounds"])
problems = sum(len(o["problems"]) for o in outcomes)
stopped = sum(len(o["fail_stopped"]) for o in outcomes)
gaps = sum(e["report"]["gaps"] for o in outcomes for e in o["engines"])
waits = sorted(max(r["latency_us"]) / 1000 for o in outcomes for r in o["rounds"])
print(f"{len(outcomes)} of {sys.argv[2]} runs checked: {acked} orders acknowledged, "
      f"{given_up} given up, {retries} retries, {twice} applied twice, "
      f"{missing} acknowledged but missing, {problems} problems, {stopped} nodes ended on "
      f"their own, {gaps} replication gaps filled")
if waits:
    print(f"longest wait of an order per run: median {statistics.median(waits):.0f} ms, "
          f"max {waits[-1]:.0f} ms")
ok = twice == missing == problems == stopped == given_up == 0
sys.exit(0 if ok and len(outcomes) == int(sys.argv[2]) else 1)
PY
echo "$runs runs, $failed failed"
[ "$failed" -eq 0 ]
