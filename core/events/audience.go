package events

import "slices"

// Audience is who may see an event: the principals who may read what it is
// about at the moment it happened. Every publisher names one, because an
// event's payload tells as much as a read of its object would: an event
// stream shows a principal only what the actions would show it.
//
// The zero Audience is nobody: an event published without thought reaches
// no principal's stream, rather than every one.
type Audience struct {
	everyone   bool
	principals []string
	// also decides for principals not listed (nil: nobody else).
	also func(principal string) bool
}

// Everyone is the audience of an event about no one's object (the owner
// process changed, the engine's own state).
func Everyone() Audience { return Audience{everyone: true} }

// Only is the audience of the given principals (duplicates and empty names
// are harmless).
func Only(principals ...string) Audience { return Audience{principals: slices.Clip(principals)} }

// Or widens a to every principal check accepts as well. check is asked at
// delivery, once per subscriber that a listing does not already admit: for
// an object whose readers are known only to its subsystem.
func (a Audience) Or(check func(principal string) bool) Audience {
	prev := a.also
	a.also = check
	if prev != nil {
		a.also = func(p string) bool { return prev(p) || check(p) }
	}
	return a
}

// And widens a to the principals of b as well: an event about access that
// changed reaches those who had it and those who have it now.
func (a Audience) And(b Audience) Audience {
	out := Audience{everyone: a.everyone || b.everyone}
	out.principals = append(slices.Clip(a.principals), b.principals...)
	switch {
	case a.also == nil:
		out.also = b.also
	case b.also == nil:
		out.also = a.also
	default:
		out.also = func(p string) bool { return a.also(p) || b.also(p) }
	}
	return out
}

// Includes reports whether principal may see the event.
func (a Audience) Includes(principal string) bool {
	if a.everyone || slices.Contains(a.principals, principal) {
		return true
	}
	return a.also != nil && a.also(principal)
}

// VisibleTo reports whether principal may see e (its Audience includes it).
func (e Event) VisibleTo(principal string) bool { return e.Audience.Includes(principal) }
