// Package verdictview renders the verdicts: `snapview whatif` (the trace
// simulated under other allocator settings, analyze/whatif; WriteWhatif,
// and the cap verdict that state --at oom and the page repeat,
// WhatifCapVerdict), `snapview explain` (the findings of analyze/explain
// with their evidence and actions; WriteExplain), `snapview forecast`
// (analyze/forecast's peak at another size, an interval where the runs
// only bound it; WriteForecast) and `snapview check` (the CI gate of
// analyze/check; WriteCheckText, WriteCheckJSON, WriteCheckJUnit), as
// text and as JSON. Each verdict shows its evidence and its limits; the
// package computes no figure of its own.
package verdictview
