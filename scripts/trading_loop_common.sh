# Sourced by the trading loop scripts (trading_failover_loop.sh,
# trading_isolation_loop.sh, trading_restart_loop.sh,
# trading_broker_loop.sh): goes to the repository root, names the trading
# binary, `$trading` (TRADING_BIN if set, e.g. CI's target/debug/trading,
# the test step's unoptimised build, relative to the repository root or
# absolute; otherwise target/release/trading, built here), names the pinned nats-server for it (`trading cluster` runs the
# server it is given) and makes a directory for the runs' records, `$dir`,
# removed on exit.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ -n "${TRADING_BIN:-}" ]; then
  trading="$TRADING_BIN"
  [ -x "$trading" ] || { echo "TRADING_BIN=$trading is not an executable" >&2; exit 1; }
else
  cargo build -q --release -p trading
  trading=target/release/trading
fi
NATS_SERVER="${NATS_SERVER:-$(scripts/nats-server.sh)}"
export NATS_SERVER
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
