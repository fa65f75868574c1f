#!/usr/bin/env bash
# Self-check of the Pekko peer's validation: small clean runs must pass
# their checks, and a standby that processes two orders in swapped order
# (--fault reorder-standby) must come back as a failed RESULT (exit 1, a
# `failure` field naming the book, `verified: false`). Needs java and mvn.
#   peers/pekko/check.sh
set -euo pipefail
cd "$(dirname "$0")"
quick=(--repeats 2 --min-warmup 1 --max-warmup 2)
fail() { echo "check.sh: $*" >&2; exit 1; }

for run in "pingpong --msgs 20000 --pairs 10 --in-flight 3" \
           "chameneos --meetings 3000 --threads 1 --throughput 100" \
           "trading --variant one-way --clients 2 --orders 3000" \
           "trading --variant request-reply --clients 2 --orders 3000" \
           "delayed --jobs 2000 --delay-ms 20" \
           "remote --mode pingpong --in-flight 8 --msgs 2000" \
           "remote --mode stream --msgs 20000"; do
    # shellcheck disable=SC2086
    out=$(./run.sh $run "${quick[@]}" 2>/dev/null) || fail "$run: exit $?: $out"
    grep -q '^RESULT ' <<<"$out" || fail "$run: no RESULT line"
    ! grep -q '"failure"' <<<"$out" || fail "$run: a check failed: $out"
    echo "ok: $run"
done

set +e
out=$(./run.sh trading --variant request-reply --clients 1 --orders 3000 \
    --fault reorder-standby "${quick[@]}" 2>/dev/null)
status=$?
set -e
[ "$status" -eq 1 ] || fail "the reordered standby exited with $status, expected 1"
grep -q '"verified":false' <<<"$out" || fail "the reordered standby was reported verified: $out"
grep -q '"failure":"engine 0: book' <<<"$out" || fail "no failure naming the book: $out"
echo "ok: a reordered standby is caught"
