#!/usr/bin/env bash
# Makes the pinned nats-server available to tests, benchmarks and CI, and
# prints its absolute path on stdout (diagnostics go to stderr).
#
#   scripts/nats-server.sh                  # into this checkout's .tools/bin
#   scripts/nats-server.sh --bin-dir DIR    # into DIR (your own project's)
#   scripts/nats-server.sh --version        # prints the pinned version
#
# Order of preference:
#   1. $NATS_SERVER (an explicit binary), if its version is the pinned one;
#   2. nats-server in the bin dir (default: .tools/bin in this repository,
#      git-ignored), if pinned;
#   3. a nats-server on PATH, if its version is the pinned one;
#   4. otherwise `go install` of the pinned version into the bin dir.
# A binary of another version is never used: the remote tests and the
# benchmark compare figures across runs, so the server is pinned.
set -euo pipefail

VERSION="2.15.2"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN_DIR="$ROOT/.tools/bin"

usage() {
  echo "usage: $0 [--bin-dir DIR | --version]" >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
    --version)
      printf '%s\n' "$VERSION"
      exit 0
      ;;
    --bin-dir)
      [ $# -ge 2 ] && [ -n "$2" ] || usage
      mkdir -p "$2"
      BIN_DIR="$(cd "$2" && pwd)"
      shift 2
      ;;
    *)
      usage
      ;;
  esac
done

# Prints the binary's path and exits when it reports the pinned version.
use_if_pinned() {
  local bin="$1"
  [ -n "$bin" ] && [ -x "$bin" ] || return 0
  local got
  got="$("$bin" --version 2>/dev/null || true)"
  # nats-server prints e.g. "nats-server: v2.15.2".
  if [ "${got##*v}" = "$VERSION" ]; then
    printf '%s\n' "$bin"
    exit 0
  fi
  echo "nats-server.sh: ignoring $bin (reports '$got', want v$VERSION)" >&2
}

use_if_pinned "${NATS_SERVER:-}"
use_if_pinned "$BIN_DIR/nats-server"
use_if_pinned "$(command -v nats-server || true)"

if ! command -v go >/dev/null 2>&1; then
  echo "nats-server.sh: nats-server v$VERSION is not installed and Go is not on PATH;" >&2
  echo "  install Go and rerun $0," >&2
  echo "  or point NATS_SERVER at a nats-server v$VERSION binary." >&2
  exit 1
fi

mkdir -p "$BIN_DIR"
echo "nats-server.sh: installing nats-server v$VERSION into $BIN_DIR (once; about 1-2 minutes)" >&2
GOBIN="$BIN_DIR" go install "github.com/nats-io/nats-server/v2@v$VERSION" >&2
use_if_pinned "$BIN_DIR/nats-server"
echo "nats-server.sh: go install finished but $BIN_DIR/nats-server does not report v$VERSION" >&2
exit 1
