//go:build !sdkhttp_unmended

package sdkhttp

// Unmended is false: Client mends every request body (see the package doc).
// A build with the tag sdkhttp_unmended switches the mend off.
const Unmended = false
