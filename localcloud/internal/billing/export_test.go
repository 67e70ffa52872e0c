package billing

// SetScanPage sets how many items a Scan of Storage asks for, and returns
// what puts it back.
func SetScanPage(n int) (restore func()) {
	was := scanPage
	scanPage = n
	return func() { scanPage = was }
}
