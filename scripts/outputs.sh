#!/usr/bin/env bash
# outputs.sh: run every snapview command's text and --json views over the
# shared corpus and write each output to its own file, so that two builds can
# be compared byte for byte (a refactor must leave every output as it was):
#
#   go build -o /tmp/old ./cmd/snapview   # at the old commit
#   go build -o /tmp/new ./cmd/snapview   # at the new one
#   scripts/outputs.sh /tmp/old /tmp/out-old
#   scripts/outputs.sh /tmp/new /tmp/out-new
#   diff -r /tmp/out-old /tmp/out-new && echo byte-equal
#
# Each output file holds the command's stdout, then its stderr and exit
# status. HTML reports and exported files are written under OUTDIR too.
# CORPUS (default ../shared/snapshots beside the repository) and QUICK=1
# (the torch2.11 folders and the probes only) choose the inputs.
set -u
bin=${1:?usage: outputs.sh SNAPVIEW_BINARY OUTDIR}
out=${2:?usage: outputs.sh SNAPVIEW_BINARY OUTDIR}
top=$(cd "$(dirname "$0")/.." && pwd)
corpus=${CORPUS:-$top/../shared/snapshots}
[ -d "$corpus" ] || { echo "outputs.sh: no corpus at $corpus" >&2; exit 1; }
bin=$(readlink -f "$bin")
mkdir -p "$out"

files=()
for f in "$corpus"/torch2.11/*/snapshot.pickle "$corpus"/torch2.11-probe/*.pickle; do files+=("$f"); done
if [ "${QUICK:-0}" != 1 ]; then
	for f in "$corpus"/public/*.pickle "$corpus"/field/*.pickle "$corpus"/field/*.json \
		"$corpus"/hostile/*.pickle "$corpus"/whatif/*/*/snapshot.pickle.xz \
		"$corpus"/scaling/*/*/snapshot.pickle.xz "$top"/testdata/snapshots/*.pickle; do
		[ -f "$f" ] && files+=("$f")
	done
fi

# run NAME ARGS...: one command's output into $dir/NAME.
run() {
	local name=$1
	shift
	(cd "$dir" && timeout 120 "$bin" "$@" >"$name" 2>"$name.err"
		echo "exit $?" >>"$name.err")
}

for f in "${files[@]}"; do
	rel=${f#"$corpus"/}
	rel=${rel#"$top"/}
	dir="$out/$(echo "$rel" | tr '/' '_')"
	mkdir -p "$dir"
	run info info "$f"
	run info.json info --json "$f"
	run summary summary "$f"
	run summary.json summary --json "$f"
	run summary.torch summary --format torch "$f"
	run state state "$f"
	run state.json state --json "$f"
	run state.end state --at end "$f"
	run state.oom state --at oom "$f"
	run segments segments "$f"
	run segments.json segments --json "$f"
	run leaks leaks "$f"
	run leaks.json leaks --json "$f"
	run trace.head trace --to peak "$f"
	run trace.memviz trace --format memviz "$f"
	run whatif whatif "$f"
	run whatif.json whatif --json "$f"
	run diff diff "$f" --base-at end --at peak
	run diff.json diff --json "$f" --base-at end --at peak
	run report.out report -o report.html "$f"
	run export.pprof export --format folded -o export.folded "$f"
	run export.chrome export --format chrome-trace -o export.chrome.json "$f"
	run explain explain "$f"
	run explain.json explain --json "$f"
done

# Commands over several files.
dir="$out/_multi"
mkdir -p "$dir"
run ranks.2dev ranks "$corpus"/torch2.11/two_devices/snapshot.pickle
run ranks.public ranks "$corpus"/public/p02-empty-4dev.pickle "$corpus"/public/p13-state-only-2dev.pickle
run ranks.public.json ranks --json "$corpus"/public/p02-empty-4dev.pickle "$corpus"/public/p13-state-only-2dev.pickle
run diff.two diff "$corpus"/torch2.11/mlp_train/snapshot.pickle "$corpus"/torch2.11/leak_train/snapshot.pickle
run diff.two.json diff --json "$corpus"/torch2.11/mlp_train/snapshot.pickle "$corpus"/torch2.11/leak_train/snapshot.pickle
run report.base report -o report.base.html --base "$corpus"/torch2.11/mlp_train/snapshot.pickle "$corpus"/torch2.11/leak_train/snapshot.pickle
sc="$corpus"/scaling/gpt2_bs
if [ -d "$sc" ]; then
	run forecast.gpt2 forecast --param batch --to 8,24 "$sc"/batch_1/snapshot.pickle.xz=1 "$sc"/batch_2/snapshot.pickle.xz=2 "$sc"/batch_4/snapshot.pickle.xz=4
	run forecast.gpt2.json forecast --json --param batch --max --limit 10883MiB "$sc"/batch_1/snapshot.pickle.xz=1 "$sc"/batch_2/snapshot.pickle.xz=2
fi
# The monitoring commands: memory_stats() logs and dumps, nvidia-smi logs,
# the CI gate and watch --once (the bundled logs of testdata/snapshots).
td="$top"/testdata/snapshots
t11="$corpus"/torch2.11
dir="$out/_monitor"
mkdir -p "$dir"
run stats stats "$td"/monitor_train.stats.jsonl
run stats.json stats --json "$td"/monitor_train.stats.jsonl
run stats.small stats --rows 0 "$td"/monitor_small.stats.jsonl
run stats.dump stats "$t11"/two_devices/snapshot.stats.json
run smi smi --tz UTC "$td"/monitor_train.smi.csv
run smi.stats smi --tz UTC --stats "$td"/monitor_train.stats.jsonl "$td"/monitor_train.smi.csv
run smi.stats.json smi --json --tz UTC --stats "$td"/monitor_train.stats.jsonl "$td"/monitor_train.smi.csv
run smi.snapshot smi --tz UTC --snapshot "$td"/monitor_train.pickle --stats "$td"/monitor_train.stats.jsonl "$td"/monitor_train.smi.csv
run smi.noheader smi --tz UTC "$td"/monitor_small.noheader.csv
run check.leak check --baseline "$t11"/mlp_train/snapshot.pickle --max-growth allocated_peak=5 --max reserved_peak=110% --no-leak --no-oom --no-retries --junit check.xml "$t11"/leak_train/snapshot.pickle
run check.leak.json check --json --baseline "$t11"/mlp_train/snapshot.pickle --max-growth allocated_peak=5 --no-leak "$t11"/leak_train/snapshot.pickle
run check.strict check --strict --max reserved_peak=1GiB "$t11"/late_start/snapshot.pickle
run check.2dev check --max allocated_peak=1GiB --no-oom "$t11"/two_devices/snapshot.pickle
run check.log check --max allocated_peak=1GiB --no-retries --no-leak "$td"/monitor_train.stats.jsonl
run check.logbase check --baseline "$td"/monitor_small.stats.jsonl --max-growth reserved_peak=10 "$td"/monitor_train.stats.jsonl
run check.dump check --baseline "$t11"/mlp_train/stats.json --max-growth allocated_peak=1 "$t11"/leak_train/stats.json
run check.wrong check --no-oom "$td"/monitor_train.smi.csv
run watch.stats watch --once --stats "$td"/monitor_train.stats.jsonl --stop-on climb
run watch.smi watch --once --tz UTC --smi "$td"/monitor_train.smi.csv --stop-on climb --warmup 5s
run watch.both watch --once --tz UTC --stats "$td"/monitor_small.stats.jsonl --smi "$td"/monitor_small.smi.csv --stop-on 1GiB
run watch.wrong watch --once --stats "$td"/monitor_train.smi.csv
echo "outputs.sh: ${#files[@]} files into $out"
