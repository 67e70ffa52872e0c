package lambdart

// DelayPIDRecording makes every process start wait for slow before the
// runtime records its pid, as a busy machine may; restore undoes it.
func DelayPIDRecording(slow func()) (restore func()) {
	afterStart = slow
	return func() { afterStart = nil }
}
