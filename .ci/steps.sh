# shellcheck shell=bash
# The step timer `.ci/run` and `.ci/lane` share: each step prints when it
# starts and how long the one before it took, so a slow step shows in the
# log without timing the whole run again. Sourced, not run.
STEP_NAME=""
STEP_START=0
step() {
  if [ -n "$STEP_NAME" ]; then
    printf '== took %ss: %s\n' "$((SECONDS - STEP_START))" "$STEP_NAME"
  fi
  STEP_NAME="$1"
  STEP_START=$SECONDS
  printf '\n== %s (at %ss)\n' "$1" "$SECONDS"
}
