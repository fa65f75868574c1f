#!/usr/bin/env bash
# The trading system's partition loop (needs root and iproute2):
# trading_isolation_loop.sh partition [N] [args].
exec "$(dirname "$0")/trading_isolation_loop.sh" partition "$@"
