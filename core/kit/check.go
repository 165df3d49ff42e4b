package kit

import (
	"context"
	"maps"
	"slices"
)

// Checker verifies what one subsystem stored, for engram check: it returns
// the problems found, each naming the record (an audit chain that does not
// verify, an index entry without its record), and an error only when it
// could not check at all (a damaged store).
type Checker func(ctx context.Context) ([]string, error)

// AddChecker registers a subsystem's checker under its name.
func (e *Env) AddChecker(subsystem string, c Checker) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.checkers == nil {
		e.checkers = map[string]Checker{}
	}
	e.checkers[subsystem] = c
}

// Check runs every checker, in the order of their names, and returns each
// subsystem's problems (an empty list when it found none). It stops at the
// first checker that could not check.
func (e *Env) Check(ctx context.Context) (map[string][]string, error) {
	e.mu.Lock()
	checkers := maps.Clone(e.checkers)
	e.mu.Unlock()
	out := make(map[string][]string, len(checkers))
	for _, name := range slices.Sorted(maps.Keys(checkers)) {
		problems, err := checkers[name](ctx)
		if err != nil {
			return out, err
		}
		out[name] = append([]string{}, problems...)
	}
	return out, nil
}
