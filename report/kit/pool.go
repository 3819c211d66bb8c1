package kit

import "github.com/snapview/snapview/snapshot"

// PoolLabel names a pool: "large" or "small", the private pool id
// when not the default pool, and "expandable".
func PoolLabel(large bool, pool snapshot.PoolID, expandable bool) string {
	s := "small"
	if large {
		s = "large"
	}
	if !pool.IsDefault() {
		s += " " + pool.String()
	}
	if expandable {
		s += " expandable"
	}
	return s
}
