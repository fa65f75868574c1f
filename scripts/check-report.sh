#!/usr/bin/env bash
# Checks the benchmark report in a real headless browser (Debian's
# chromium): the page loads with no console errors, every chart is an SVG
# that made it into the rendered DOM, and a screenshot is written for a
# person to look at (outside the repository).
#
#   scripts/check-report.sh [REPORT_DIR] [SCREENSHOT]
#
# REPORT_DIR defaults to report/ (written by `troupe-bench all`); if it has
# no index.html, a small run is made first. The screenshot defaults to
# target/report.png.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-report}"
shot="${2:-target/report.png}"

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "check-report: installing chromium"
        apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null
        browser=$(command -v chromium)
    else
        echo "check-report: chromium is missing; install it (apt-get install chromium) and rerun" >&2
        exit 2
    fi
fi
if [ ! -f "$dir/index.html" ]; then
    echo "check-report: no $dir/index.html; making a quick run"
    cargo run --release -q -p troupe-bench -- all --quick --repeats 1 --report "$dir" >/dev/null
fi
page="file://$(cd "$dir" && pwd)/index.html"
mkdir -p "$(dirname "$shot")"
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars)

log=$(mktemp)
dom=$(mktemp)
trap 'rm -f "$log" "$dom"' EXIT
"$browser" "${flags[@]}" --enable-logging=stderr --v=0 --dump-dom "$page" >"$dom" 2>"$log"
"$browser" "${flags[@]}" --window-size=1200,6000 --screenshot="$shot" "$page" >/dev/null 2>&1

svgs_in_file=$(grep -o "<svg" "$dir/index.html" | wc -l)
svgs_in_dom=$(grep -o "<svg" "$dom" | wc -l)
console_errors=$(grep -E "CONSOLE|Uncaught|Failed to load resource" "$log" || true)
sections=$(grep -o "<section id=" "$dom" | wc -l)

echo "check-report: $sections sections, $svgs_in_dom of $svgs_in_file charts in the rendered page, screenshot $shot"
status=0
if [ -n "$console_errors" ]; then
    echo "check-report: console errors:" >&2
    echo "$console_errors" >&2
    status=1
fi
if [ "$svgs_in_file" -eq 0 ] || [ "$svgs_in_dom" -ne "$svgs_in_file" ]; then
    echo "check-report: charts missing from the rendered page" >&2
    status=1
fi
if [ ! -s "$shot" ]; then
    echo "check-report: no screenshot" >&2
    status=1
fi
[ "$status" = 0 ] && echo "check-report: OK"
exit "$status"
