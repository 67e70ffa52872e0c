//go:build !unix

package main

import "errors"

// execSelf is not available here: the emulator's data directory must be in
// the environment when the process starts.
var execSelf = func([]string) error {
	return errors.New("keeping data needs a Unix system here (or start with KUMO_DATA_DIR and CLUB_LOCAL_STATE_PREPARED set); use --persist=false")
}
