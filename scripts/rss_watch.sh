#!/usr/bin/env bash
# Watches a process's memory: samples its resident set every half second
# into OUT.mem ("HH:MM:SS kB"), and once it passes LIMIT_KB (default 3 GB)
# writes every thread's backtrace to OUT.bt1 and, three seconds later,
# OUT.bt2 (with gdb, if installed), then kills it. Run it beside a long
# benchmark run, so that a runaway allocation names its cause:
#
#   target/release/troupe-bench all --peer pekko ... &
#   scripts/rss_watch.sh $! target/all-run
set -euo pipefail
pid=${1:?usage: rss_watch.sh PID OUT [LIMIT_KB]}
out=${2:?usage: rss_watch.sh PID OUT [LIMIT_KB]}
limit=${3:-3000000}
backtraces() {
  if command -v gdb >/dev/null; then
    gdb -p "$pid" -batch -ex "thread apply all bt 40" > "$1" 2>&1 || true
  else
    echo "gdb not installed: no backtraces" > "$1"
  fi
}
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status" 2>/dev/null || true)
  echo "$(date +%T) ${rss:-0}" >> "$out.mem"
  if [ -n "$rss" ] && [ "$rss" -gt "$limit" ]; then
    echo "RSS $rss kB at $(date +%T), over $limit kB" >> "$out.found"
    backtraces "$out.bt1"
    sleep 3
    backtraces "$out.bt2"
    kill -9 "$pid" || true
    exit 1
  fi
  sleep 0.5
done
