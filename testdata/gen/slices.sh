#!/bin/sh
# slices.sh: makes testdata/slices/*.pickle|json, the slices and conversions
# of corpus files whose _memory_viz outputs (recorded on a machine with
# PyTorch 2.11: see testdata/slices/README.md) cmd/snapview's
# TestSlicesAgreeWithMemviz compares with snapview's.
# Run from the repository root, with the corpus at ../shared.
set -e
c=../shared/snapshots
o=testdata/slices
sv="go run ./cmd/snapview"
$sv slice --from entry:100 --to entry:400 -o $o/mlp_train.100-400.pickle $c/torch2.11/mlp_train/snapshot.pickle
$sv slice --around oom --entries 300 -o $o/oom.around.pickle $c/torch2.11/oom/snapshot.pickle
$sv slice --from entry:50 --to entry:300 -o $o/expandable.50-300.pickle $c/torch2.11/expandable/snapshot.pickle
$sv slice --from entry:30 --to entry:200 -o $o/annotations.30-200.pickle $c/torch2.11/annotations/snapshot.pickle
$sv slice --from entry:5 --to entry:60 -o $o/cuda_graph.5-60.pickle $c/torch2.11/cuda_graph/snapshot.pickle
$sv slice --from entry:10 --to entry:150 -o $o/ring_overflow.10-150.pickle $c/torch2.11/ring_overflow/snapshot.pickle
$sv slice --around peak --entries 400 -o $o/multistream.peak.pickle $c/torch2.11/multistream/snapshot.pickle
$sv slice --around peak --entries 150 --format json -o $o/leak_train.peak.json $c/torch2.11/leak_train/snapshot.pickle
$sv convert -o $o/p12-torch2.0.convert.pickle $c/public/p12-torch2.0-history-layout-oom.pickle
$sv convert -o $o/p25-no-timestamps-4dev.convert.pickle $c/public/p25-no-timestamps-4dev.pickle
$sv convert --format json -o $o/late_start.convert.json $c/torch2.11/late_start/snapshot.pickle
