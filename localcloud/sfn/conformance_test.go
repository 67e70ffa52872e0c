package sfn_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/sfn"
)

// conformanceFile is one file of testdata/conformance: a list of cases on
// one topic. Each case is a definition, an input, scripted task results by
// resource ARN, and the expected outcome: status, output or error, history
// event types, the inputs the tasks received and the virtual time taken.
//
// A definition of the form {"$ref": "name"} refers to an entry of the
// file's "shared" object, so several cases can run one definition.
// "repeatedInput" adds to the input object fields holding a text repeated
// many times, for cases about length limits.
type conformanceFile struct {
	Cases  []conformanceCase          `json:"cases"`
	Shared map[string]json.RawMessage `json:"shared,omitempty"`
}

type conformanceCase struct {
	Name       string          `json:"name"`
	Source     string          `json:"source,omitempty"`
	Definition json.RawMessage `json:"definition"`
	Input      json.RawMessage `json:"input,omitempty"`
	Repeated   map[string]struct {
		Text  string `json:"text"`
		Times int    `json:"times"`
	} `json:"repeatedInput,omitempty"`
	Tasks  map[string][]fakeResponse `json:"tasks,omitempty"`
	Expect struct {
		InvalidDefinition []string                     `json:"invalidDefinition,omitempty"`
		InvalidExcludes   []string                     `json:"invalidDefinitionExcludes,omitempty"`
		Status            string                       `json:"status,omitempty"`
		Output            json.RawMessage              `json:"output,omitempty"`
		Error             string                       `json:"error,omitempty"`
		Cause             string                       `json:"cause,omitempty"`
		CauseContains     string                       `json:"causeContains,omitempty"`
		Events            []string                     `json:"events,omitempty"`
		TaskInputs        map[string][]json.RawMessage `json:"taskInputs,omitempty"`
		ElapsedSeconds    *float64                     `json:"elapsedSeconds,omitempty"`
	} `json:"expect"`
}

func TestConformance(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/conformance/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		var cf conformanceFile
		require.NoError(t, json.Unmarshal(raw, &cf), file)
		require.NotEmpty(t, cf.Cases, file)
		topic := strings.TrimSuffix(filepath.Base(file), ".json")
		for _, tc := range cf.Cases {
			var ref struct {
				Ref string `json:"$ref"`
			}
			if json.Unmarshal(tc.Definition, &ref) == nil && ref.Ref != "" {
				def, ok := cf.Shared[ref.Ref]
				require.True(t, ok, "%s: no shared definition %q", file, ref.Ref)
				tc.Definition = def
			}
			t.Run(topic+"/"+tc.Name, func(t *testing.T) {
				t.Parallel()
				runConformanceCase(t, tc)
			})
		}
	}
}

func runConformanceCase(t *testing.T, tc conformanceCase) {
	e := setup(t)
	fakes := map[string]*fakeTask{}
	for resource, responses := range tc.Tasks {
		f := newFake(responses...)
		fakes[resource] = f
		e.Resources.Handle(resource, f)
	}
	ctx := context.Background()
	definition := string(tc.Definition)
	var verbatim string
	if json.Unmarshal(tc.Definition, &verbatim) == nil {
		definition = verbatim // a definition given as a string is used as is, e.g. invalid JSON
	}
	sm, err := e.Service.CreateStateMachine(ctx, sfn.CreateStateMachineInput{Name: "conformance", Definition: definition})
	if len(tc.Expect.InvalidDefinition) > 0 {
		require.Error(t, err)
		require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeInvalidDefinition))
		for _, want := range tc.Expect.InvalidDefinition {
			require.Contains(t, err.Error(), want)
		}
		for _, unwanted := range tc.Expect.InvalidExcludes {
			require.NotContains(t, err.Error(), unwanted)
		}
		return
	}
	require.NoError(t, err)
	input := "{}"
	if len(tc.Input) > 0 {
		input = string(tc.Input)
	}
	if len(tc.Repeated) > 0 {
		fields := map[string]any{}
		require.NoError(t, json.Unmarshal([]byte(input), &fields))
		for name, r := range tc.Repeated {
			fields[name] = strings.Repeat(r.Text, r.Times)
		}
		raw, err := json.Marshal(fields)
		require.NoError(t, err)
		input = string(raw)
	}
	started, err := e.Service.StartExecution(ctx, sfn.StartExecutionInput{StateMachineArn: sm.ARN, Name: "run", Input: input})
	require.NoError(t, err)
	x := e.Wait(started.ARN)
	require.Equal(t, tc.Expect.Status, x.Status, "error %q cause %q", x.Error, x.Cause)
	if tc.Expect.Output != nil {
		require.JSONEq(t, string(tc.Expect.Output), x.Output)
	}
	if tc.Expect.Error != "" {
		require.Equal(t, tc.Expect.Error, x.Error)
	}
	if tc.Expect.Cause != "" {
		require.Equal(t, tc.Expect.Cause, x.Cause)
	}
	if tc.Expect.CauseContains != "" {
		require.Contains(t, x.Cause, tc.Expect.CauseContains)
	}
	if tc.Expect.Events != nil {
		require.Equal(t, tc.Expect.Events, e.EventTypes(x.ARN))
	}
	for resource, want := range tc.Expect.TaskInputs {
		got := fakes[resource].inputs()
		require.Len(t, got, len(want), "calls of %s", resource)
		for i := range want {
			require.JSONEq(t, string(want[i]), got[i], "call %d of %s", i, resource)
		}
	}
	if tc.Expect.ElapsedSeconds != nil {
		require.Equal(t, time.Duration(*tc.Expect.ElapsedSeconds*float64(time.Second)), x.StopDate.Sub(x.StartDate))
	}
}
