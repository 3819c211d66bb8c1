package analyze

import "github.com/snapview/snapview/snapshot"

// InferVersion returns the range of PyTorch releases consistent with what
// s holds: [Info].Version, without the replays [Inspect] makes.
func InferVersion(s *snapshot.Snapshot) VersionHint { return inferVersion(s) }
