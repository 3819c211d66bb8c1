#!/usr/bin/env bash
# firstpaint.sh: open snapview HTML reports in headless Chromium (no
# network) and print when each first painted, from the browser's own
# performance timings:
#
#   scripts/firstpaint.sh [-n ROUNDS] REPORT.html...
#
# For each report and round it prints, in milliseconds since navigation:
#   fcp      first-contentful-paint (performance.getEntriesByType("paint"))
#   charts   when report.js had set up every chart (its data-ready-ms)
#   drawn    when ECharts had rendered every chart once (its "finished"
#            event; report.js's data-drawn-ms)
#   painted  the second animation frame after the load event: the page
#            and its canvases rasterized, on screen
#   load     loadEventEnd
# and the median of "painted" over the rounds (a round whose frame never
# came, or came only when the virtual-time budget ran out, is left out).
# A copy of each report with a small probe script appended is opened (the
# original is not changed).
# Chromium is found as chromium, chromium-browser or google-chrome, or
# named by SNAPVIEW_CHROMIUM. Other jobs on the machine slow the browser:
# the load average is printed with the figures.
set -euo pipefail

rounds=3
if [[ ${1:-} == -n ]]; then
	rounds=$2
	shift 2
fi
if [[ $# -eq 0 ]]; then
	echo "usage: $0 [-n ROUNDS] REPORT.html..." >&2
	exit 2
fi
bin=${SNAPVIEW_CHROMIUM:-}
if [[ -z $bin ]]; then
	for b in chromium chromium-browser google-chrome; do
		if command -v "$b" >/dev/null; then
			bin=$(command -v "$b")
			break
		fi
	done
fi
if [[ -z $bin ]]; then
	echo "$0: chromium not found (apt-get install -y chromium, or set SNAPVIEW_CHROMIUM)" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The probe waits for report.js (data-ready-ms), then for two animation
# frames (the first paint after the charts), and writes the timings into
# an attribute that --dump-dom shows.
probe='<script>
(function () {
  function done() {
    var nav = performance.getEntriesByType("navigation")[0] || {};
    var fcp = performance.getEntriesByType("paint").filter(function (e) { return e.name === "first-contentful-paint"; })[0];
    var r = {
      fcp: fcp ? Math.round(fcp.startTime) : -1,
      charts: Number(document.documentElement.getAttribute("data-ready-ms") || -1),
      drawn: Number(document.documentElement.getAttribute("data-drawn-ms") || -1),
      painted: Math.round(painted),
      load: Math.round(nav.loadEventEnd || -1)
    };
    document.documentElement.setAttribute("data-firstpaint", JSON.stringify(r));
  }
  var painted = -1;
  window.addEventListener("load", function () {
    done(); // provisional: painted stays -1 if no frame comes
    requestAnimationFrame(function () {
      requestAnimationFrame(function () { painted = performance.now(); done(); });
    });
  });
})();
</script>'

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-40s %8s %8s %8s %8s %8s %8s\n' report MiB fcp charts drawn painted load
for f in "$@"; do
	name=$(basename "$f")
	page="$tmp/$name"
	# The probe goes before the last </body> (the ECharts bundle holds one
	# too, earlier).
	python3 - "$f" "$page" "$probe" <<'PY'
import sys
src, dst, probe = sys.argv[1], sys.argv[2], sys.argv[3]
s = open(src, encoding="utf-8").read()
i = s.rfind("</body>")
open(dst, "w", encoding="utf-8").write(s[:i] + probe + s[i:])
PY
	mib=$(awk -v b="$(stat -c %s "$f")" 'BEGIN { printf "%.1f", b / 1048576 }')
	times=()
	for ((r = 0; r < rounds; r++)); do
		dom=$("$bin" --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions \
			--disable-background-networking --proxy-server=127.0.0.1:9 --window-size=1400,900 --virtual-time-budget=60000 --run-all-compositor-stages-before-draw \
			--user-data-dir="$tmp/profile" \
			--dump-dom "file://$page" 2>/dev/null)
		j=$( (grep -o 'data-firstpaint="[^"]*"' <<<"$dom" | head -1 || true) |  sed -e 's/^data-firstpaint="//' -e 's/"$//' -e 's/&#34;/"/g' -e 's/&quot;/"/g')
		if [[ -z $j ]]; then
			echo "$name: the probe did not report (the page did not load within the 60 s budget, or a script failed)" >&2
			continue
		fi
		read -r fcp charts drawn painted load < <(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(r["fcp"], r["charts"], r["drawn"], r["painted"], r["load"])' "$j")
		printf '%-40s %8s %8s %8s %8s %8s %8s\n' "$name" "$mib" "$fcp" "$charts" "$drawn" "$painted" "$load"
		# Headless Chromium sometimes gives no frame before the dump (-1)
		# or only at the end of the virtual-time budget: those rounds do
		# not count.
		if [[ $painted -ge 0 && $painted -lt 60000 ]]; then
			times+=("$painted")
		fi
	done
	if [[ ${#times[@]} -gt 0 ]]; then
		med=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
		echo "$name: median first paint with charts ${med} ms over ${#times[@]} rounds"
	fi
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
