# Sourced by the trading loop scripts (trading_failover_loop.sh,
# trading_isolation_loop.sh, trading_restart_loop.sh,
# trading_broker_loop.sh): goes to the repository root, builds the
# trading binary, names the pinned nats-server for it (`trading cluster`
# runs the server it is given) and makes a directory for the runs'
# records, `$dir`, removed on exit.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build -q --release -p trading
NATS_SERVER="${NATS_SERVER:-$(scripts/nats-server.sh)}"
export NATS_SERVER
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
