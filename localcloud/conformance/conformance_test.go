package conformance_test

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"sort"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/sdkhttp"
	"github.com/clubdev/club/localcloud/testkit"
)

var (
	report = flag.String("conformance.report", "", "write each case's result on each engine to this file (JSON lines)")
	doc    = flag.String("conformance.doc", "", "rewrite the conformance table of this Markdown file (docs/local-cloud.md) from this run's results")
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := testkit.Run(m)
	if err := writeReport(); err != nil {
		println("conformance:", err.Error())
		code = 1
	}
	if err := writeDoc(); err != nil {
		println("conformance:", err.Error())
		code = 1
	}
	os.Exit(code)
}

// awsConfig is an SDK configuration pointed at the endpoint of the engine the
// suite runs on now.
func awsConfig(t *testing.T) aws.Config {
	t.Helper()
	return aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(testkit.URL()),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		HTTPClient:   sdkhttp.New(),
	}
}

// outcome is one case's result on one engine.
type outcome struct {
	Case    string `json:"case"`
	Engine  string `json:"engine"`
	Doc     string `json:"doc"`
	Result  string `json:"result"` // "pass", "refused", "fail"
	Feature string `json:"feature,omitempty"`
	// Reason is the refusal's message, for the table.
	Reason string `json:"reason,omitempty"`
}

var (
	mu       sync.Mutex
	outcomes []outcome
)

// cite names the AWS documentation page the case follows and records the
// case's result on the current engine when it ends.
func cite(t *testing.T, doc string) {
	t.Helper()
	o := &outcome{Case: t.Name(), Engine: testkit.Engine(), Doc: doc}
	t.Cleanup(func() {
		switch {
		case t.Failed():
			o.Result = "fail"
		case o.Feature != "":
			o.Result = "refused"
		default:
			o.Result = "pass"
		}
		mu.Lock()
		outcomes = append(outcomes, *o)
		mu.Unlock()
	})
	refusals.Store(t, o)
}

var refusals sync.Map // *testing.T → *outcome

// refusedByDesign asserts that err is the local cloud's refusal of feature:
// an error that names the feature and the local cloud. The case is then
// recorded as refused by design rather than as carried out.
func refusedByDesign(t *testing.T, err error, feature string) {
	t.Helper()
	require.Error(t, err, "the local cloud accepted a request it cannot carry out as AWS would (%s)", feature)
	require.Contains(t, err.Error(), feature, "the refusal names the feature")
	require.Contains(t, err.Error(), "local cloud", "the refusal says it is the local cloud's")
	if o, ok := refusals.Load(t); ok {
		o.(*outcome).Feature = feature
		msg := err.Error()
		var api smithy.APIError
		if errors.As(err, &api) {
			msg = api.ErrorMessage()
		}
		o.(*outcome).Reason = msg
	}
}

func writeReport() error {
	if *report == "" {
		return nil
	}
	mu.Lock()
	defer mu.Unlock()
	sort.SliceStable(outcomes, func(i, j int) bool { return outcomes[i].Case < outcomes[j].Case })
	f, err := os.Create(*report)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, o := range outcomes {
		if err := enc.Encode(o); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
