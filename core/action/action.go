// Package action is the engine's action registry. Every operation a user can
// perform is an action: a name ("cortex.update"), a one-line summary, an
// args struct decoded strictly from JSON, and a handler returning a JSON
// result. The batch runner, the TUI's command palette, workflows and plan
// subtasks all run actions through the registry, so validation lives here
// and in the handlers, never in a face.
package action

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/errs"
)

// Call is who is acting, within which turn, and by which clock.
type Call struct {
	// Principal is the agent id acting (a batch step's `as`, else --agent).
	Principal string
	// Turn is the turn id the action belongs to; "" outside a turn.
	Turn string
	// Clock is the engine clock; handlers read time only from it.
	Clock clock.Clock
}

// Spec describes an action.
type Spec struct {
	// Name is namespace.verb, e.g. "trace.list".
	Name string
	// Summary is one line saying what the action does.
	Summary string
	// ReadOnly marks actions that change nothing stored.
	ReadOnly bool
	// Joinable marks actions that write only through env.Update on the
	// engine's store and wait on nothing inside a transaction (no model,
	// no worker, no other goroutine's write): a plan subtask may run one
	// inside the transaction that records the subtask done, so that a
	// resumed plan never repeats its effect. Anything that waits must not
	// be joinable: a transaction held open while waiting stalls writers.
	Joinable bool
	// Exclusive marks actions that run alone: no other request runs while
	// one does. An action that runs a script of its own (tour.load) is
	// exclusive, so that its steps may pin the engine clock.
	Exclusive bool
	// Secret marks actions whose result holds a secret (token.create's
	// token): the result is never stored, so a request of one may not
	// carry an idempotency key (whose record keeps the result).
	Secret bool
	// NamesFiles marks actions whose arguments name a file on the
	// engine's machine (eval.retrieval's file). A file path comes only
	// from the person: a plan's subtask, a model's proposal and a TCP
	// client may not run one.
	NamesFiles bool
	// FileArgs are the arguments that name a file on the engine's
	// machine when given as a string (plan.create's file, plan.execute's
	// checkpoint path): a request that gives one is refused where
	// NamesFiles is (NamesFile).
	FileArgs []string
}

// Field describes one argument of an action, derived from its args struct:
// the json tag gives the name, `help:"..."` the description, and
// `arg:"required"` makes it required.
type Field struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required,omitempty"`
	Help     string `json:"help,omitempty"`
}

// Action is a registered action.
type Action struct {
	Spec
	Fields []Field

	argsType reflect.Type
	run      func(ctx context.Context, call Call, raw json.RawMessage) (any, error)
}

// Handler is the function behind an action.
type Handler[A, R any] func(ctx context.Context, call Call, args A) (R, error)

// Registry holds the actions by name. Safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	actions map[string]*Action
	removed map[string]string // namespace → why its actions are absent (build tags)
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{actions: map[string]*Action{}, removed: map[string]string{}}
}

// Register adds an action. A is the args struct (struct{} for none), R the
// result, which must encode as a JSON object. Registering a name twice, or
// args that are not a struct, is a programming error and panics.
func Register[A, R any](r *Registry, spec Spec, h Handler[A, R]) {
	t := reflect.TypeFor[A]()
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("action %s: args must be a struct, not %s", spec.Name, t))
	}
	if !strings.Contains(spec.Name, ".") || spec.Summary == "" {
		panic(fmt.Sprintf("action %q: needs a namespace.verb name and a summary", spec.Name))
	}
	a := &Action{Spec: spec, Fields: describeFields(t), argsType: t}
	a.run = func(ctx context.Context, call Call, raw json.RawMessage) (any, error) {
		var args A
		if err := DecodeStrict(raw, &args); err != nil {
			return nil, err
		}
		return h(ctx, call, args)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.actions[spec.Name]; dup {
		panic("action registered twice: " + spec.Name)
	}
	r.actions[spec.Name] = a
}

// Removed records that a namespace's actions were left out of this build, and
// why; looking one of them up then says so instead of guessing a neighbour.
func (r *Registry) Removed(namespace, why string) {
	r.mu.Lock()
	r.removed[namespace] = why
	r.mu.Unlock()
}

// IsRemoved reports whether a namespace was marked removed.
func (r *Registry) IsRemoved(namespace string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.removed[namespace]
	return ok
}

// Lookup returns the named action, or an UnknownAction error naming the
// closest registered action (or the build tag that removed it).
func (r *Registry) Lookup(name string) (*Action, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if a, ok := r.actions[name]; ok {
		return a, nil
	}
	ns, _, _ := strings.Cut(name, ".")
	if why, ok := r.removed[ns]; ok {
		return nil, errs.New(errs.UnknownAction, "unknown action %q: %s", name, why)
	}
	names := make([]string, 0, len(r.actions))
	for n := range r.actions {
		names = append(names, n)
	}
	if near := Nearest(name, names); near != "" {
		return nil, errs.New(errs.UnknownAction, "unknown action %q; did you mean %q? (actions.list lists them all)", name, near).
			With("nearest", near)
	}
	return nil, errs.New(errs.UnknownAction, "unknown action %q (actions.list lists them all)", name)
}

// List returns every action, sorted by name.
func (r *Registry) List() []*Action {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Action, 0, len(r.actions))
	for _, a := range r.actions {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Invoke decodes raw (a JSON object, or empty for no args) strictly into the
// action's args and runs it, returning the result encoded as a JSON object.
func (a *Action) Invoke(ctx context.Context, call Call, raw json.RawMessage) (json.RawMessage, error) {
	res, err := a.run(ctx, call, raw)
	if err != nil {
		return nil, err
	}
	out, err := MarshalJSON(res)
	if err != nil {
		return nil, errs.New(errs.Internal, "%s: encoding its result: %w", a.Name, err)
	}
	if len(out) == 0 || out[0] != '{' {
		return nil, errs.New(errs.Internal, "%s: result is not a JSON object", a.Name)
	}
	return out, nil
}

// Skeleton is a JSON object with every argument field (or, with
// requiredOnly, every required one) set to a placeholder of its type: a
// starting point for typing args by hand.
func (a *Action) Skeleton(requiredOnly bool) string { return SkeletonOf(a.Fields, requiredOnly) }

// SkeletonOf is Skeleton for an action known only by its fields, as
// actions.list describes it (a console over a connection has no *Action).
func SkeletonOf(fields []Field, requiredOnly bool) string {
	var parts []string
	for _, f := range fields {
		if f.Required || !requiredOnly {
			parts = append(parts, fmt.Sprintf("%q: %s", f.Name, placeholder(f.Type)))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func placeholder(typ string) string {
	switch {
	case typ == "integer", typ == "number":
		return "0"
	case typ == "boolean":
		return "false"
	case strings.HasPrefix(typ, "array"):
		return "[]"
	case typ == "object":
		return "{}"
	case typ == "any JSON value":
		return "null"
	}
	return `""`
}

// Nearest returns the candidate closest to name by edit distance, if any is
// close enough to be a plausible typo or a shared namespace.
func Nearest(name string, candidates []string) string {
	best, bestD := "", -1
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted)
	for _, c := range sorted {
		d := editDistance(name, c)
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 {
		return ""
	}
	limit := max(len(name), len(best))/3 + 1
	ns, _, _ := strings.Cut(name, ".")
	if bestD <= limit || strings.HasPrefix(best, ns+".") {
		return best
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// MarshalJSON is json.Marshal without HTML escaping: results and messages
// are read by people and programs, not embedded in web pages, so "<id>"
// stays "<id>" rather than "\u003cid\u003e".
func MarshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// NamesFile reports whether a request of the action with args names a file
// on the engine's machine: the action always does (NamesFiles), or args
// give one of its FileArgs as a string. Args that are not a JSON object
// name none (the action refuses them itself).
func (a *Action) NamesFile(args json.RawMessage) bool {
	if a.NamesFiles {
		return true
	}
	if len(a.FileArgs) == 0 {
		return false
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(args, &fields) != nil {
		return false
	}
	for _, name := range a.FileArgs {
		var path string
		if json.Unmarshal(fields[name], &path) == nil && path != "" {
			return true
		}
	}
	return false
}
