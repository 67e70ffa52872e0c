package freeport

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The address is on loopback, below the ephemeral range, and free: it can
// be bound at once.
func TestAddrIsFreeAndOutsideTheEphemeralRange(t *testing.T) {
	low, ok := ephemeralLow()
	require.True(t, ok, "this machine tells its ephemeral range")
	seen := map[string]bool{}
	for range 50 {
		addr, err := Addr()
		require.NoError(t, err)
		host, port, err := net.SplitHostPort(addr)
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1", host)
		p, err := strconv.Atoi(port)
		require.NoError(t, err)
		require.GreaterOrEqual(t, p, lowest)
		require.Less(t, p, low, "a port of the ephemeral range can be taken by any outgoing connection")
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err, "the port is free")
		ln.Close()
		seen[addr] = true
	}
	require.Greater(t, len(seen), 40, "picked at random, so that concurrent callers do not meet")
}
