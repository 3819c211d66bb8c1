#!/usr/bin/env bash
# zoomredraw.sh: how long a snapview HTML report takes to redraw its
# timeline when zoomed, in headless Chromium (real time, no network):
#
#   scripts/zoomredraw.sh [-n ROUNDS] REPORT.html...
#
# For each report it runs report/html's BenchmarkZoomRedraw, which zooms
# the first timeline from the whole trace to windows of 10%, 1% and 0.1%
# of it, ROUNDS times each (default 5), and prints the median milliseconds
# from the zoom to the second animation frame after the page's redraw
# (ms/redraw), with what was drawn (the level of the multi-resolution
# index, rows, single allocations). Other jobs on the machine slow the
# browser: the load average is printed with the figures.
set -euo pipefail
rounds=5
if [[ ${1:-} == -n ]]; then
	rounds=$2
	shift 2
fi
if [[ $# -eq 0 ]]; then
	echo "usage: $0 [-n ROUNDS] REPORT.html..." >&2
	exit 2
fi
cd "$(dirname "$0")/.."
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for f in "$@"; do
	echo "== $f"
	SNAPVIEW_ZOOM_PAGE=$(realpath "$f") go test ./report/html/ -run '^$' -bench BenchmarkZoomRedraw -benchtime "${rounds}x" -v 2>&1 |
		grep -E 'ms/redraw|window .*level' || true
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
