package clubctl

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// runWith runs clubctl with Globals adjusted by setup (fake clients, a fixed
// AWS configuration) and returns the exit status and both streams.
func runWith(t *testing.T, setup func(*Globals), args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	g := newGlobals(&out, &errb)
	// Never the developer's AWS configuration: tests name their endpoint.
	g.loadAWS = func(context.Context) (aws.Config, error) { return aws.Config{}, nil }
	if setup != nil {
		setup(g)
	}
	code = execute(context.Background(), g, args)
	return code, out.String(), errb.String()
}
