// Package traceview renders `snapview trace`: one device's trace entries
// (device_traces), or the pinned host allocator's (host_traces), listed
// for people one a line, fitted to the terminal (WriteTrace), and as one
// JSON document (WriteTraceJSON); TraceDevices and NewTrace choose the
// traces and resolve the --from/--to range on each device's replay. With
// --format memviz, WriteMemvizTrace prints what `python -m
// torch.cuda._memory_viz trace FILE` prints (torch/cuda/_memory_viz.py
// trace()), byte for byte. It computes no figure of its own.
package traceview
