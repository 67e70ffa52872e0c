//go:build club_noadversary

package localcloud

// adversaryLayer is false: built with the tag club_noadversary, the local
// cloud has no adversary in any call path, as before it existed, so that a
// benchmark can measure what the layer costs while it is off
// (docs/benchmarks.md). --adversary is refused, and so is turning it on
// at /_club/adversary (501).
const adversaryLayer = false
