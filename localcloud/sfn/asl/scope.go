package asl

// Scope is what a path or intrinsic function is evaluated against: `$` is
// Input and `$$` is the context object, built on first use by Context.
type Scope struct {
	Input   any
	Context func() any
}

func (s *Scope) root(p *Path) any {
	if p.context {
		if s.Context == nil {
			return nil
		}
		return s.Context()
	}
	return s.Input
}

// Get evaluates a path in the scope. See Path.Get.
func (s *Scope) Get(p *Path) (any, bool) { return p.Get(s.root(p)) }
