// Package leakview renders `snapview leaks`: the live allocations that
// analyze/leaks grouped by stack and ranked, as text fitted to the
// terminal (WriteLeaks: the table, each group's growth as a sparkline,
// its stack through report/stacks, its verdict) and as one JSON document
// (WriteLeaksJSON). It computes no figure of its own.
package leakview
