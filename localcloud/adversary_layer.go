//go:build !club_noadversary

package localcloud

// adversaryLayer is true: the adversary stands in the endpoint's handler
// chain and wraps the deliverers' invokers, passing calls through while it
// is off. Building with the tag club_noadversary leaves it out (see
// adversary_layer_absent.go).
const adversaryLayer = true
