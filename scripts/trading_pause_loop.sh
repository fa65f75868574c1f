#!/usr/bin/env bash
# The trading system's pause loop: trading_isolation_loop.sh pause [N] [args].
exec "$(dirname "$0")/trading_isolation_loop.sh" pause "$@"
