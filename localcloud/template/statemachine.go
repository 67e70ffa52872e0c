package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

func stateMachineRefs(r *resolver, _ string, _ *rawResource, name string) (*resourceRefs, error) {
	arn := r.arn("states", "stateMachine:"+name)
	return &resourceRefs{ref: arn, attrs: map[string]string{"Arn": arn, "Name": name}}, nil
}

type stateMachineProps struct {
	Name                    string
	Type                    string
	Definition              json.RawMessage
	DefinitionUri           *string
	DefinitionSubstitutions map[string]stringValue
	Role                    string
	Policies                json.RawMessage
	Events                  map[string]eventProps

	Logging               ignored
	Tracing               ignored
	PermissionsBoundary   ignored
	RolePath              ignored
	AutoPublishAlias      ignored
	DeploymentPreference  ignored
	UseAliasAsEventTarget ignored
	PropagateTags         ignored
	Tags                  ignored
}

func buildStateMachine(b *builder, in resourceInput) error {
	var p stateMachineProps
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	sm := StateMachine{
		Source:        in.id,
		Name:          in.refs.attrs["Name"],
		ARN:           in.refs.ref,
		Type:          p.Type,
		Substitutions: map[string]string{},
		Role:          p.Role,
		Policies:      p.Policies,
	}
	switch sm.Type {
	case "":
		sm.Type = "STANDARD"
	case "STANDARD", "EXPRESS":
	default:
		return fmt.Errorf("Type %q: expected STANDARD or EXPRESS", sm.Type)
	}
	for k, v := range p.DefinitionSubstitutions {
		sm.Substitutions[k] = string(v)
	}

	var (
		text     []byte
		yamlText bool
	)
	switch {
	case len(p.Definition) > 0 && p.DefinitionUri != nil:
		return errors.New("Definition and DefinitionUri are exclusive")
	case len(p.Definition) > 0:
		text = p.Definition
	case p.DefinitionUri != nil:
		sm.DefinitionPath = absPath(b.r.opts.Dir, *p.DefinitionUri)
		data, err := os.ReadFile(sm.DefinitionPath)
		if err != nil {
			return fmt.Errorf("DefinitionUri: %w", err)
		}
		text = data
		ext := strings.ToLower(filepath.Ext(sm.DefinitionPath))
		yamlText = ext == ".yaml" || ext == ".yml"
	default:
		return errors.New("Definition or DefinitionUri is required")
	}
	def, err := substituteDefinition(text, sm.Substitutions, yamlText)
	if err != nil {
		return err
	}
	sm.Definition = def

	names := make([]string, 0, len(p.Events))
	for name := range p.Events {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ev := p.Events[name]
		if ev.Type != "Schedule" && ev.Type != "ScheduleV2" {
			return fmt.Errorf("event %s (%s): unsupported event type", name, ev.Type)
		}
		var props any = map[string]any{}
		if len(ev.Properties) > 0 {
			if err := json.Unmarshal(ev.Properties, &props); err != nil {
				return err
			}
		}
		e, err := scheduleEvent(name, ev.Type, props)
		if err != nil {
			return fmt.Errorf("event %s (%s): %w", name, ev.Type, err)
		}
		sm.Schedules = append(sm.Schedules, e)
	}
	b.stack.StateMachines = append(b.stack.StateMachines, sm)
	return nil
}

// placeholder matches a DefinitionSubstitutions placeholder.
var placeholder = regexp.MustCompile(`\$\{([^}]*)\}`)

// substituteDefinition replaces every ${name} in the definition text, as
// Step Functions does, and returns the definition as compact JSON. A
// placeholder with no substitution is an error: it is the commonest cause of
// a broken deploy, so the local cloud reports it at parse time.
func substituteDefinition(text []byte, subs map[string]string, yamlText bool) (json.RawMessage, error) {
	var missing []string
	out := placeholder.ReplaceAllFunc(text, func(m []byte) []byte {
		name := string(m[2 : len(m)-1])
		v, ok := subs[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return []byte(v)
	})
	if len(missing) > 0 {
		return nil, fmt.Errorf("definition uses ${%s} but DefinitionSubstitutions has no such entry", strings.Join(missing, "}, ${"))
	}
	if yamlText {
		var v any
		if err := yaml.Unmarshal(out, &v); err != nil {
			return nil, fmt.Errorf("definition: %w", err)
		}
		js, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("definition: %w", err)
		}
		out = js
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("definition is not a JSON object: %w", err)
	}
	if _, ok := doc["StartAt"]; !ok {
		return nil, errors.New("definition has no StartAt")
	}
	if _, ok := doc["States"]; !ok {
		return nil, errors.New("definition has no States")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
