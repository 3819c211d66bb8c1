// Package compareview renders the comparisons of analyze/compare: `snapview
// diff` (two files, or two moments of one, side by side: the figures, the
// stacks that grew or shrank; WriteDiff, WriteDiffJSON) and `snapview
// ranks` (every rank's figures beside the others', the outliers named;
// WriteRanks, WriteRanksJSON), as text fitted to the terminal and as
// JSON. It computes no figure of its own.
package compareview
