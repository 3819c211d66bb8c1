#!/usr/bin/env bash
# bench.sh: time snapview against python3's pickle.load on the big snapshot,
# side by side in one run, and print medians, ratios and peak RSS.
#
#   scripts/bench.sh [-n ROUNDS] [--scale] [--keep DIR] [SNAPSHOT.pickle[.xz|.gz]]
#
# The default snapshot is ../shared/snapshots/big/gpt2_2M_events/snapshot.pickle.xz
# (2,000,000 trace entries, 195 MB decompressed). It is decompressed into a
# temporary folder (removed on exit), snapview is built there once, and then
# ROUNDS rounds (default 3) run, each in turn, under /usr/bin/time:
#
#   python3 -c 'pickle.load(...)'           the baseline
#   snapview summary --format torch FILE
#   snapview leaks FILE                      (skipped while there is no leaks command)
#   snapview report -o TMP/report.html FILE
#
# The table gives the median wall time, CPU time (user + system) and peak
# RSS of each, and the ratios the goals are stated in: summary/python time,
# leaks/summary and report/summary time, and summary's peak RSS against the
# file's size. The time ratios are of wall times; the CPU-time ratios in
# brackets move less when other jobs share the machine.
#
# --scale also writes 0.5M, 1M, 4M and 8M-entry variants of the file with
# scripts/scale_snapshot.py (the 2M one is the file itself), times the
# snapview commands on each (ROUNDS rounds, alternating) and prints wall
# time, CPU time and peak RSS per million entries, which stay flat when
# both grow linearly.
#
# Other jobs on the machine make the times noisy: the script prints the
# load average before and after; run it on an idle machine for figures to
# keep.
set -euo pipefail

rounds=3
scale=0
keep=""
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
src="$repo/../shared/snapshots/big/gpt2_2M_events/snapshot.pickle.xz"

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}

while [ $# -gt 0 ]; do
	case "$1" in
	-n | --rounds)
		rounds=${2:?-n needs a number}
		shift 2
		;;
	--scale)
		scale=1
		shift
		;;
	--keep)
		keep=${2:?--keep needs a folder}
		shift 2
		;;
	-h | --help) usage 0 ;;
	-*)
		echo "bench.sh: unknown option $1" >&2
		usage
		;;
	*)
		src=$1
		shift
		;;
	esac
done
case "$rounds" in
'' | *[!0-9]* | 0)
	echo "bench.sh: -n wants a positive number of rounds, got '$rounds'" >&2
	exit 2
	;;
esac

need() {
	if ! command -v "$1" >/dev/null 2>&1; then
		echo "bench.sh: $1 is missing ($2)" >&2
		exit 1
	fi
}
need go "https://go.dev/dl/"
need python3 "apt-get install python3"
case "$src" in
*.xz) need xz "apt-get install xz-utils" ;;
*.gz) need gzip "apt-get install gzip" ;;
esac
if [ ! -x /usr/bin/time ]; then
	echo "bench.sh: /usr/bin/time is missing (apt-get install time); the shell's time keyword does not give peak RSS" >&2
	exit 1
fi
if [ ! -f "$src" ]; then
	echo "bench.sh: $src: no such file (give a snapshot, or put the shared corpus at ../shared)" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/snapview-bench.XXXXXX")
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

file="$tmp/snapshot.pickle"
case "$src" in
*.xz)
	echo "decompressing $src" >&2
	xz -dc "$src" >"$file"
	;;
*.gz)
	echo "decompressing $src" >&2
	gzip -dc "$src" >"$file"
	;;
*) cp "$src" "$file" ;;
esac
bytes=$(stat -c %s "$file")

echo "building snapview" >&2
(cd "$repo" && go build -o "$tmp/snapview" ./cmd/snapview)
sv="$tmp/snapview"

# The commands, by name. leaks is left out while the binary has none.
names=(python summary leaks report)
if ! "$sv" leaks --help >/dev/null 2>&1; then
	echo "note: this snapview has no leaks command yet; skipping it" >&2
	names=(python summary report)
fi

# run NAME FILE TAG: one timed run; appends "seconds rss_kb user_s sys_s"
# to $tmp/NAME.TAG.
run() {
	local name=$1 f=$2 out="$tmp/$1.$3"
	local cmd
	case "$name" in
	python) cmd=(python3 -c 'import pickle,sys; pickle.load(open(sys.argv[1],"rb"))' "$f") ;;
	summary) cmd=("$sv" summary --format torch "$f") ;;
	leaks) cmd=("$sv" leaks "$f") ;;
	report) cmd=("$sv" report -o "$tmp/report.html" "$f") ;;
	esac
	if ! /usr/bin/time -f '%e %M %U %S' -o "$tmp/time" "${cmd[@]}" >/dev/null 2>"$tmp/stderr"; then
		echo "bench.sh: $name failed on $f:" >&2
		cat "$tmp/stderr" >&2
		exit 1
	fi
	tail -n 1 "$tmp/time" >>"$out"
}

# median FILE COLUMN: the median of one column of a run file (column 0:
# user + system seconds).
median() {
	awk -v c="$2" '{print (c == 0 ? $3 + $4 : $c)}' "$1" | sort -g | awk '{v[NR]=$1} END {
		if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a/b }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k*1024/1e6 }'; }

echo "machine: $(nproc) cores, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1); $(go version | cut -d' ' -f3); $(python3 --version)" >&2
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

for r in $(seq "$rounds"); do
	for n in "${names[@]}"; do
		echo "round $r/$rounds: $n" >&2
		run "$n" "$file" main
	done
done

echo
printf 'file: %s, %.1f MB%s; median of %d rounds\n\n' "$(basename "$src")" "$(awk -v b="$bytes" 'BEGIN{print b/1e6}')" \
	"$(case "$src" in *.xz | *.gz) echo ' decompressed' ;; esac)" "$rounds"
printf '| command | time (s) | CPU (s) | peak RSS (MB) | ratio (CPU-time ratio) |\n|---|---:|---:|---:|---|\n'
py_s=$(median "$tmp/python.main" 1)
py_c=$(median "$tmp/python.main" 0)
sum_s=$(median "$tmp/summary.main" 1)
sum_c=$(median "$tmp/summary.main" 0)
for n in "${names[@]}"; do
	s=$(median "$tmp/$n.main" 1)
	c=$(median "$tmp/$n.main" 0)
	k=$(median "$tmp/$n.main" 2)
	case "$n" in
	python) label='python3 pickle.load'; what='' ;;
	summary) label='snapview summary --format torch'; what="$(ratio "$s" "$py_s") ($(ratio "$c" "$py_c")) x python (goal <= 0.15); RSS $(ratio "$((k * 1024))" "$bytes") x file (goal <= 1)" ;;
	leaks) label='snapview leaks'; what="$(ratio "$s" "$sum_s") ($(ratio "$c" "$sum_c")) x summary (goal <= 1.5)" ;;
	report) label='snapview report'; what="$(ratio "$s" "$sum_s") ($(ratio "$c" "$sum_c")) x summary (goal <= 1.5)" ;;
	esac
	printf '| %s | %.2f | %.2f | %s | %s |\n' "$label" "$s" "$c" "$(mb "$k")" "$what"
done

if [ "$scale" = 1 ]; then
	echo >&2
	echo "writing the 0.5M, 1M, 4M and 8M-entry variants" >&2
	python3 "$here/scale_snapshot.py" "$file" "$tmp/scale" 500000 1000000 4000000 8000000
	ln -s "$file" "$tmp/scale/snapshot_2000000.pickle"
	snames=("${names[@]:1}")
	for r in $(seq "$rounds"); do
		for m in 500000 1000000 2000000 4000000 8000000; do
			for n in "${snames[@]}"; do
				echo "scale round $r/$rounds: $n, $m entries" >&2
				run "$n" "$tmp/scale/snapshot_$m.pickle" "$m"
			done
		done
	done
	echo
	printf 'scaling (median of %d rounds; per M = per million trace entries)\n\n' "$rounds"
	printf '| entries | file (MB) |'
	for n in "${snames[@]}"; do printf ' %s s | CPU s per M | RSS MB | MB per M |' "$n"; done
	printf '\n|---:|---:|'
	for n in "${snames[@]}"; do printf '%s' '---:|---:|---:|---:|'; done
	echo
	for m in 500000 1000000 2000000 4000000 8000000; do
		fb=$(stat -L -c %s "$tmp/scale/snapshot_$m.pickle")
		printf '| %s | %.0f |' "$(awk -v m="$m" 'BEGIN{printf "%gM", m/1e6}')" "$(awk -v b="$fb" 'BEGIN{print b/1e6}')"
		for n in "${snames[@]}"; do
			s=$(median "$tmp/$n.$m" 1)
			c=$(median "$tmp/$n.$m" 0)
			k=$(median "$tmp/$n.$m" 2)
			awk -v s="$s" -v c="$c" -v k="$k" -v m="$m" 'BEGIN { printf " %.2f | %.2f | %.0f | %.0f |", s, c/(m/1e6), k*1024/1e6, k*1024/1e6/(m/1e6) }'
		done
		echo
	done
fi

echo >&2
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if [ -n "$keep" ]; then
	mkdir -p "$keep"
	cp "$tmp"/*.main "$keep"/ 2>/dev/null || true
	if [ "$scale" = 1 ]; then
		cp "$tmp"/*.[0-9]* "$keep"/ 2>/dev/null || true
	fi
	echo "raw timings kept in $keep" >&2
fi
