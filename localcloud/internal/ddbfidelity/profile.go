package ddbfidelity

// Profile says what an engine gets wrong, so that the fidelity layer
// corrects it or, where it cannot be corrected from outside, refuses it.
// Measured by the conformance suite (localcloud/conformance), whose cases
// fail when an engine changes under a profile.
type Profile struct {
	// Engine names the engine in refusals.
	Engine string
	// IndexesNotSparse: a Query or Scan of a secondary index returns items
	// missing the index's key attributes, ignores the index's Projection,
	// does not order by the index's sort key, and Scan ignores IndexName.
	// The layer then reads the index's items itself (index.go).
	IndexesNotSparse bool
	// NoListAppend: list_append in an UpdateExpression is ignored (the
	// attribute is left null). Refused.
	NoListAppend bool
	// NoListElementUpdates: SET or REMOVE of a list element (l[1]) is
	// ignored. Refused.
	NoListElementUpdates bool
	// FloatAdd: ADD computes in binary floating point (0.1 + 0.2 =
	// 0.30000000000000004); FloatSetArithmetic: SET's + and - do. Such
	// arithmetic on a number that is not an integer, or an integer beyond
	// 2^53, is refused.
	FloatAdd, FloatSetArithmetic bool
	// NoNestedProjection: a ProjectionExpression path below the top level
	// (m.a, l[1]) returns nothing. The layer projects such paths itself
	// for GetItem, Query and Scan and refuses them elsewhere.
	NoNestedProjection bool
}

// ProfileOf is the profile of the named engine ("kumo", "moto"), as
// measured for kumo v0.33.1 and moto 5.2.1.
func ProfileOf(engine string) Profile {
	switch engine {
	case "kumo":
		return Profile{Engine: engine, IndexesNotSparse: true, NoListAppend: true, NoListElementUpdates: true,
			FloatAdd: true, FloatSetArithmetic: true, NoNestedProjection: true}
	case "moto":
		return Profile{Engine: engine, FloatSetArithmetic: true}
	default:
		return Profile{Engine: engine}
	}
}

// floatClauses lists the clauses whose arithmetic the engine does in
// floating point: true for ADD, false for SET.
func (p Profile) floatClauses() []bool {
	var out []bool
	if p.FloatAdd {
		out = append(out, true)
	}
	if p.FloatSetArithmetic {
		out = append(out, false)
	}
	return out
}
