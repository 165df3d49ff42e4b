package action

import "fmt"

// Ref names an action together with its argument and result types. Each
// action's owning package declares one (cortex.ActionGet, history.ActionWrite,
// …), registers the handler through it, and faces call the action through it
// (conn.Call(ctx, c, cortex.ActionGet, args)): the name, the args and the
// result cannot drift apart, because a handler of other types, or a call
// with other args, does not compile.
type Ref[A, R any] struct{ name string }

// NewRef declares the action called name (namespace.verb) with args A and
// result R.
func NewRef[A, R any](name string) Ref[A, R] { return Ref[A, R]{name: name} }

// Name is the action's name, e.g. "cortex.get".
func (r Ref[A, R]) Name() string { return r.name }

// Register adds the action to reg with handler h; spec gives its summary
// and whether it is read-only (spec.Name is the Ref's, or empty).
func (r Ref[A, R]) Register(reg *Registry, spec Spec, h Handler[A, R]) {
	if spec.Name != "" && spec.Name != r.name {
		panic(fmt.Sprintf("action %s registered as %q", r.name, spec.Name))
	}
	spec.Name = r.name
	Register(reg, spec, h)
}

// None is the arguments of an action that takes none.
type None struct{}
