package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/wire"
)

// hub fans the engine's events out to the event streams. It keeps the last
// events in a ring for streams that resume, and gives every stream a
// bounded queue: a stream whose queue is full is dropped, never waited
// for, so that a slow reader holds up neither the engine nor the others.
type hub struct {
	queue int // each subscriber's queue

	mu      sync.Mutex
	ring    []events.Event // circular, the last len(ring) events
	head, n int            // the oldest event's index; how many there are
	evicted uint64         // the Seq of the newest event gone from the ring
	subs    map[*subscriber]struct{}
	closed  bool
}

// subscriber is one event stream's end of the hub.
type subscriber struct {
	// principal is who reads the stream: it gets only the events this
	// principal may see.
	principal string
	kinds     map[string]bool // nil: every kind
	ch        chan events.Event
	// end is closed when the stream must end: dropped (set before) or
	// the server shutting down.
	end     chan struct{}
	dropped bool
}

func (s *subscriber) wants(ev events.Event) bool {
	return (s.kinds == nil || s.kinds[ev.Name]) && ev.VisibleTo(s.principal)
}

func newHub(replay, queue int) *hub {
	return &hub{queue: queue, ring: make([]events.Event, replay), subs: map[*subscriber]struct{}{}}
}

// publish remembers ev and hands it to every subscriber that wants it,
// dropping those whose queue is full. It never blocks.
func (h *hub) publish(ev events.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == len(h.ring) {
		h.evicted = h.ring[h.head].Seq
		h.ring[h.head] = ev
		h.head = (h.head + 1) % len(h.ring)
	} else {
		h.ring[(h.head+h.n)%len(h.ring)] = ev
		h.n++
	}
	for s := range h.subs {
		if !s.wants(ev) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			s.dropped = true
			close(s.end)
			delete(h.subs, s)
		}
	}
}

// subscribe adds a subscriber. When resume is set it also returns the
// remembered events after seq `after` that the subscriber wants, to send
// before its live ones, and gap when events after `after` are already
// forgotten. ok is false once the hub is closed.
func (h *hub) subscribe(principal string, kinds map[string]bool, resume bool, after uint64) (s *subscriber, replay []events.Event, gap, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, false, false
	}
	s = &subscriber{principal: principal, kinds: kinds, ch: make(chan events.Event, h.queue), end: make(chan struct{})}
	if resume {
		gap = after < h.evicted
		for i := range h.n {
			ev := h.ring[(h.head+i)%len(h.ring)]
			if ev.Seq > after && s.wants(ev) {
				replay = append(replay, ev)
			}
		}
	}
	h.subs[s] = struct{}{}
	return s, replay, gap, true
}

// unsubscribe removes a subscriber (if still there).
func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

// close ends every stream and refuses new ones.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.subs {
		close(s.end)
		delete(h.subs, s)
	}
}

// dropGrace is how long a dropped stream may take to write its last
// event: a reader that still reads gets it; one that reads nothing is
// cut off then. A variable for tests.
var dropGrace = 10 * time.Second

// handleEvents answers GET /v1/events with a Server-Sent Events stream.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request, p Principal, tcp bool) {
	q := r.URL.Query()
	kinds, kerr := parseKinds(q["kind"])
	if kerr != nil {
		s.refuse(w, r, http.StatusBadRequest, p.Agent, kerr)
		return
	}
	// The stream's reader: a token's agent over TCP; over the socket the
	// agent it names, else the owner's own.
	principal := q.Get("agent")
	switch {
	case tcp && principal != "" && principal != p.Agent:
		s.refuse(w, r, http.StatusForbidden, p.Agent, errs.New(errs.Permission,
			"agent: this token acts as %q, not %q; leave agent out or use a token of %q", p.Agent, principal, principal).With("field", "agent"))
		return
	case tcp:
		principal = p.Agent
	case principal == "":
		principal = s.e.Agent()
	}
	if s.streams.Add(1) > int64(s.lim.MaxSubscribers) {
		s.streams.Add(-1)
		w.Header().Set("Retry-After", "1")
		s.refuse(w, r, http.StatusServiceUnavailable, p.Agent, errs.New(errs.Unavailable,
			"the owner already serves %d event streams, its limit; retry in a moment", s.lim.MaxSubscribers))
		return
	}
	defer s.streams.Add(-1)

	lastID := r.Header.Get("Last-Event-ID")
	if lastID == "" {
		lastID = q.Get("after")
	}
	var resume, gap bool
	var after uint64
	if lastID != "" {
		inst, seq, ok := wire.ParseEventID(lastID)
		// An id of another owner (one that has since died) or none at
		// all: whatever came after it is unknown here.
		resume, after, gap = ok && inst == s.inst, seq, !ok || inst != s.inst
	}
	sub, replay, lost, ok := s.hub.subscribe(principal, kinds, resume, after)
	if !ok {
		w.Header().Set("Retry-After", "1")
		s.refuse(w, r, http.StatusServiceUnavailable, p.Agent, errs.New(errs.Unavailable,
			"the owner of the data directory is shutting down; retry in a moment"))
		return
	}
	defer s.hub.unsubscribe(sub)
	gap = gap || lost

	rc := http.NewResponseController(w)
	// A write blocked on a reader that reads nothing would hold this
	// handler forever: when the stream must end, a write deadline frees it.
	watching, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-sub.end:
		case <-watching:
			return
		}
		select {
		case <-s.done:
		default:
			_ = rc.SetWriteDeadline(time.Now().Add(dropGrace))
			select {
			case <-s.done:
			case <-watching:
				return
			}
		}
		// Shutting down: a stuck write must not hold up Shutdown.
		_ = rc.SetWriteDeadline(time.Now())
	}()
	failed := false
	defer func() {
		close(watching)
		<-watched
		if !failed {
			// The connection may serve another request: no deadline for it.
			_ = rc.SetWriteDeadline(time.Time{})
		}
	}()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(msg string) bool {
		if _, err := w.Write([]byte(msg)); err != nil {
			failed = true
			return false
		}
		if err := rc.Flush(); err != nil {
			failed = true
			return false
		}
		return true
	}
	if gap {
		data, _ := json.Marshal(map[string]string{"from": lastID})
		if !send("event: " + wire.EventGap + "\ndata: " + string(data) + "\n\n") {
			return
		}
	}
	for _, ev := range replay {
		if !send(s.message(ev)) {
			return
		}
	}
	if !send(": ok\n\n") {
		return
	}
	tick := time.NewTicker(s.lim.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case ev := <-sub.ch:
			if !send(s.message(ev)) {
				return
			}
		case <-sub.end:
			if sub.dropped {
				data, _ := json.Marshal(map[string]string{"message": "the reader fell more than " +
					strconv.Itoa(s.lim.SubscriberQueue) + " events behind; reconnect with Last-Event-ID to resume"})
				send("event: " + wire.EventDropped + "\ndata: " + string(data) + "\n\n")
			}
			return
		case <-tick.C:
			if tcp && !s.stillValid(r, principal) {
				// The token was revoked since the stream opened: it
				// gets nothing more (a reconnect gets the 401).
				return
			}
			if !send(": ping\n\n") {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// message is ev as one SSE message.
func (s *Server) message(ev events.Event) string {
	data, err := action.MarshalJSON(ev)
	if err != nil {
		data, _ = json.Marshal(map[string]any{"event": ev.Name, "seq": ev.Seq, "at": ev.At,
			"error": "encoding the payload: " + err.Error()})
	}
	return "id: " + wire.EventID(s.inst, ev.Seq) + "\nevent: " + ev.Name + "\ndata: " + string(data) + "\n\n"
}

// parseKinds reads the ?kind= parameters (repeated, or comma-separated);
// nil means every kind.
func parseKinds(values []string) (map[string]bool, *errs.Error) {
	var kinds map[string]bool
	var known []string
	for _, v := range values {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			if known == nil {
				for _, k := range events.Kinds() {
					known = append(known, k.Name)
				}
			}
			if !slices.Contains(known, name) {
				e := errs.New(errs.Validation, "kind: no event kind %q (docs/events.md lists them)", name)
				if near := action.Nearest(name, known); near != "" {
					e = errs.New(errs.Validation, "kind: no event kind %q; did you mean %q? (docs/events.md lists them)", name, near)
				}
				return nil, e.With("field", "kind")
			}
			if kinds == nil {
				kinds = map[string]bool{}
			}
			kinds[name] = true
		}
	}
	return kinds, nil
}

// stillValid reports whether the bearer token of TCP request r still
// acts as principal: a long-lived stream asks again every heartbeat, so
// that revoking a token ends the streams it opened.
func (s *Server) stillValid(r *http.Request, principal string) bool {
	token, ok := bearer(r.Header.Get(wire.HeaderAuthorization))
	if !ok || s.auth == nil {
		return false
	}
	p, err := s.auth.Authenticate(r.Context(), token)
	return err == nil && p.Agent == principal
}
