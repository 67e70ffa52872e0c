// Package freeport picks a loopback address for a server that is bound
// later, or by another process: a local cloud started by a test, moto
// started by the local cloud.
//
// The usual way, listening on port 0 and closing, hands out a port from
// the kernel's ephemeral range (Linux: /proc/sys/net/ipv4/ip_local_port_range,
// 32768–60999 by default), the same range every outgoing connection takes
// its local port from. Between the pick and the bind, any connection of any
// process on the machine can take the port — under a busy test run it
// happened ("bind: address already in use" for a local cloud's HTTP API).
// Addr picks below that range instead, where only deliberate binds go, at
// random so that concurrent callers do not meet, and checks that the port
// is free.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
)

// lowest is the lowest port Addr picks.
const lowest = 10000

// Addr returns "127.0.0.1:port" for a port that was free a moment ago and
// is outside the ephemeral range. Where that range cannot be read or leaves
// no room below it, it falls back to a port the kernel hands out.
func Addr() (string, error) {
	if low, ok := ephemeralLow(); ok && low > lowest+1000 {
		for range 200 {
			addr := fmt.Sprintf("127.0.0.1:%d", lowest+rand.IntN(low-lowest))
			if ln, err := net.Listen("tcp", addr); err == nil {
				ln.Close()
				return addr, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// MustAddr is Addr for tests' set-up, which cannot go on without one.
func MustAddr() string {
	addr, err := Addr()
	if err != nil {
		panic(err)
	}
	return addr
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() (int, bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, false
	}
	var low, high int
	if _, err := fmt.Sscan(string(b), &low, &high); err != nil || low <= 0 {
		return 0, false
	}
	return low, true
}
