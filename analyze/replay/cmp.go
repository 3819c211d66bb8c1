package replay

import (
	"cmp"

	"github.com/snapview/snapview/snapshot"
)

// cmpInt, cmpUint and cmpPool order addresses, sizes, streams and pool
// ids for the sorts of the replay and of Complete.
func cmpInt(a, b int64) int   { return cmp.Compare(a, b) }
func cmpUint(a, b uint64) int { return cmp.Compare(a, b) }

func cmpPool(a, b snapshot.PoolID) int {
	if c := cmpInt(a[0], b[0]); c != 0 {
		return c
	}
	return cmpInt(a[1], b[1])
}
