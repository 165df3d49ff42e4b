package ids

import "sync"

// Source hands out ids: a Generator, or a Switch over several.
type Source interface {
	New() string
}

// Switch is the engine's id source: it draws from one generator at a time.
// A request that runs alone (a step of a script session) switches it to the
// session's own generator for its duration, so that a script's ids do not
// depend on what other clients did before or between its steps. Safe for
// concurrent use.
type Switch struct {
	mu  sync.Mutex
	cur *Generator
}

// NewSwitch returns a switch drawing from g.
func NewSwitch(g *Generator) *Switch { return &Switch{cur: g} }

// New returns a fresh id from the current generator.
func (s *Switch) New() string {
	s.mu.Lock()
	g := s.cur
	s.mu.Unlock()
	return g.New()
}

// Use makes g the current generator and returns the one it replaces, for
// the caller to put back.
func (s *Switch) Use(g *Generator) (previous *Generator) {
	s.mu.Lock()
	defer s.mu.Unlock()
	previous, s.cur = s.cur, g
	return previous
}
