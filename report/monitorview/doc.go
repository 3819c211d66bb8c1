// Package monitorview renders what analyze/monitor found in the logs kept
// beside a run: nvidia-smi samples (WriteSMIText, WriteSMIJSON: the
// climb, the gaps and what they mean), memory_stats() dumps
// (WriteStatsDumpText, WriteStatsDumpJSON) and per-step records
// (WriteStepsText, WriteStepsJSON), and `snapview watch`'s live frame
// and status line (WriteWatchFrame, WatchStatusLine). It computes no
// figure of its own.
package monitorview
