package report

// The text views' pieces the HTML page (package report/html) shows beside
// its charts, so that the page words a figure as the text views do.

// Plural is n and noun, in the plural when n is not 1, as the text views
// write counts ("3 entries").
func Plural(n int, noun string) string { return plural(n, noun) }

// Seconds writes us microseconds as seconds with three decimals, as the
// text views do ("1.500 s").
func Seconds(us int64) string { return formatSeconds(us) }

// SignedBytes writes a change of n bytes with its sign, as the text views
// do ("+4.0 MiB", "-1.0 GiB", "0 B").
func SignedBytes(n int64) string { return signedBytes(n) }
