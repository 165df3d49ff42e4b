package events

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"sync"
)

// Kind is one kind of event with its one payload type T. Subsystems declare
// their kinds as package variables with Define and publish through them, so
// a payload of the wrong type does not compile, and a subscriber switches
// on the payload's type (or compares the event's name with Kind.Name).
type Kind[T any] struct {
	name     string
	progress bool
}

// Name is the kind's name, e.g. "item.mutated".
func (k Kind[T]) Name() string { return k.name }

// Publisher is where an event goes: the Broker itself, or a transaction
// that publishes its events once it commits (kit.Txn).
type Publisher interface {
	Publish(name string, to Audience, data any)
	PublishProgress(name string, to Audience, data any)
}

// Publish sends data as an event of this kind (a progress event if the kind
// was defined as one), seen by to.
func (k Kind[T]) Publish(p Publisher, to Audience, data T) {
	if k.progress {
		p.PublishProgress(k.name, to, data)
		return
	}
	p.Publish(k.name, to, data)
}

// Of returns ev's payload if ev is of this kind.
func (k Kind[T]) Of(ev Event) (T, bool) {
	if ev.Name != k.name {
		var zero T
		return zero, false
	}
	data, ok := ev.Data.(T)
	return data, ok
}

// KindInfo describes a defined kind, for docs/events.md and the check that
// it lists every kind.
type KindInfo struct {
	// Name is the kind's name.
	Name string
	// Doc says when it fires, in one sentence.
	Doc string
	// Progress marks kinds a slow subscriber may miss.
	Progress bool
	// Payload is the payload's Go type.
	Payload reflect.Type
}

var catalogue = struct {
	sync.RWMutex
	kinds map[string]KindInfo
}{kinds: map[string]KindInfo{}}

// Define declares an event kind with payload type T; doc says when it
// fires. Defining a name twice panics: two payload types for one kind is
// what this package exists to prevent.
func Define[T any](name, doc string) Kind[T] { return define[T](name, doc, false) }

// DefineProgress declares a progress kind: a later event supersedes an
// earlier one, so a subscriber that falls behind may miss some.
func DefineProgress[T any](name, doc string) Kind[T] { return define[T](name, doc, true) }

func define[T any](name, doc string, progress bool) Kind[T] {
	catalogue.Lock()
	defer catalogue.Unlock()
	if _, dup := catalogue.kinds[name]; dup {
		panic("event kind defined twice: " + name)
	}
	catalogue.kinds[name] = KindInfo{Name: name, Doc: doc, Progress: progress, Payload: reflect.TypeFor[T]()}
	return Kind[T]{name: name, progress: progress}
}

// Kinds lists every defined kind, sorted by name. Which kinds exist depends
// on which packages the program links.
func Kinds() []KindInfo {
	catalogue.RLock()
	defer catalogue.RUnlock()
	out := make([]KindInfo, 0, len(catalogue.kinds))
	for _, k := range catalogue.kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func lookupKind(name string) (KindInfo, bool) {
	catalogue.RLock()
	defer catalogue.RUnlock()
	k, ok := catalogue.kinds[name]
	return k, ok
}

// checkPayload panics when data is not the payload type of its defined
// kind: a programming error that a test run finds. Names no Define declared
// pass (the broker's own tests use ad-hoc ones); every kind engram publishes
// is defined, which TestEveryPublishedEventKindIsDefined checks.
func checkPayload(name string, data any) {
	k, ok := lookupKind(name)
	if !ok {
		return
	}
	if got := reflect.TypeOf(data); got != k.Payload {
		panic(fmt.Sprintf("event %q published with a %v payload; its kind carries %v", name, got, k.Payload))
	}
}

// UnmarshalJSON reads the line format MarshalJSON writes, decoding data
// into its kind's payload type: an event that crossed a wire arrives with
// the same typed payload it was published with. The data of a kind this
// program does not define stays a json.RawMessage.
func (e *Event) UnmarshalJSON(b []byte) error {
	var wire struct {
		Event    string          `json:"event"`
		Seq      uint64          `json:"seq"`
		At       json.RawMessage `json:"at"`
		Progress bool            `json:"progress"`
		Data     json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		return fmt.Errorf("event: %w", err)
	}
	*e = Event{Seq: wire.Seq, Name: wire.Event, Progress: wire.Progress}
	if len(wire.At) > 0 {
		if err := json.Unmarshal(wire.At, &e.At); err != nil {
			return fmt.Errorf("event %s: at: %w", wire.Event, err)
		}
	}
	k, ok := lookupKind(wire.Event)
	if !ok {
		// A kind this program does not know (a newer engine's): its data
		// stays JSON, so a subscriber skips it rather than losing the stream.
		if len(wire.Data) > 0 {
			e.Data = append(json.RawMessage(nil), wire.Data...)
		}
		return nil
	}
	payload := reflect.New(k.Payload)
	if len(wire.Data) > 0 {
		if err := json.Unmarshal(wire.Data, payload.Interface()); err != nil {
			return fmt.Errorf("event %s: data: %w", wire.Event, err)
		}
	}
	e.Data = payload.Elem().Interface()
	return nil
}
