package template

import (
	"fmt"
	"maps"
	"slices"
)

// globalsSections maps each supported Globals section to a check of its
// properties. Only properties the resource type itself accepts may appear.
var globalsSections = map[string]func(map[string]any) error{
	"Function": checkFunctionGlobals,
	"HttpApi":  func(m map[string]any) error { return decodeStrict(m, &httpAPIProps{}) },
}

// notInFunctionGlobals are function properties SAM refuses in
// Globals.Function: they name or wire one function.
var notInFunctionGlobals = []string{"FunctionName", "Events", "Policies", "Role"}

func checkFunctionGlobals(m map[string]any) error {
	for _, k := range notInFunctionGlobals {
		if _, ok := m[k]; ok {
			return fmt.Errorf("property %q cannot be global", k)
		}
	}
	return decodeStrict(m, &functionProps{})
}

// readGlobals resolves and checks the Globals sections.
func (b *builder) readGlobals(globals map[string]map[string]any) error {
	b.globals = map[string]map[string]any{}
	for section, raw := range globals {
		check, ok := globalsSections[section]
		if !ok {
			return fmt.Errorf("Globals.%s: unsupported section (supported: Function, HttpApi)", section)
		}
		v, err := b.r.eval(raw)
		if err != nil {
			return fmt.Errorf("Globals.%s: %w", section, err)
		}
		m, _ := v.(map[string]any)
		if err := check(m); err != nil {
			return fmt.Errorf("Globals.%s: %w", section, err)
		}
		b.globals[section] = m
	}
	return nil
}

// withGlobals merges a Globals section under a resource's properties.
func (b *builder) withGlobals(section string, props map[string]any) map[string]any {
	g, ok := b.globals[section]
	if !ok {
		return props
	}
	return mergeGlobals(g, props).(map[string]any)
}

// mergeGlobals applies SAM's merge rules: maps merge key by key (so
// Environment.Variables combine), lists concatenate global entries first,
// and any other local value replaces the global one.
func mergeGlobals(global, local any) any {
	switch g := global.(type) {
	case map[string]any:
		l, ok := local.(map[string]any)
		if !ok {
			return local
		}
		out := maps.Clone(g)
		for k, lv := range l {
			if gv, ok := out[k]; ok {
				out[k] = mergeGlobals(gv, lv)
			} else {
				out[k] = lv
			}
		}
		return out
	case []any:
		l, ok := local.([]any)
		if !ok {
			return local
		}
		return append(slices.Clone(g), l...)
	default:
		return local
	}
}
