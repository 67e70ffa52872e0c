//go:build sdkhttp_unmended

package sdkhttp

// Unmended is true in a build with the tag sdkhttp_unmended: Client then
// hands request bodies to the transport as the SDK made them, so that the
// answers the mend keeps can be lost again. Only for showing what the mend
// and the endpoint's replay check are for (docs/ci.md); nothing ships with it.
const Unmended = true
