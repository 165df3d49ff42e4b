package remote

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/wire"
)

// subscribeBuffer is the returned channel's buffer, and how many progress
// events may wait for a slow reader before the oldest are dropped (final
// events never are), as in process.
const subscribeBuffer = 1024

// How a subscription reconnects: after a stream ends it tries again at
// once, then waits retryFirst, doubling up to retryMax between tries, and
// gives up when the owner has been out of reach for giveUpAfter. The owner
// serves a resumed stream from Last-Event-ID, so nothing is missed unless
// it says so with wire.EventGap.
var (
	retryFirst  = 50 * time.Millisecond
	retryMax    = 400 * time.Millisecond
	giveUpAfter = time.Second
	// silentStream is how long a stream may send nothing, not even a
	// heartbeat, before it counts as dead (a peer that vanished without
	// closing the connection, over TCP).
	silentStream = 3 * wire.Heartbeat
)

// maxMessage bounds one SSE message: a larger one ends the stream.
const maxMessage = 4 * wire.MaxBody

// Subscribe is SubscribeAs for the connection's agent: Options.Agent, else
// the one the owner gives a stream that names none (over the socket its
// own agent, over TCP the token's).
func (c *Conn) Subscribe(ctx context.Context, kinds ...string) <-chan events.Event {
	return c.SubscribeAs(ctx, c.opts.Agent, kinds...)
}

// SubscribeAs streams the owner's events of the given kinds (every kind
// when none is given) that principal may see, until ctx is cancelled or
// Close is called, when the channel closes. The owner filters them: over
// TCP a token sees only what its agent may, and a principal other than
// the token's is refused. An empty principal names none: the owner streams
// for its own agent over the socket, for the token's agent over TCP (not
// Agent(), which over TCP is the owner's). A stream that ends is resumed
// after the last event received; wire.EventGap events pass through (as events.Event{Name:
// wire.EventGap}) so that the reader reloads what it shows. When the owner
// cannot be reached for about a second, the channel closes although ctx
// is live: the owner is gone.
func (c *Conn) SubscribeAs(ctx context.Context, principal string, kinds ...string) <-chan events.Event {
	out := make(chan events.Event, subscribeBuffer)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		close(out)
		return out
	}
	c.subs.Add(2)
	c.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.done, cancel)
	q := events.NewQueue(subscribeBuffer)
	ready := make(chan struct{})
	go func() {
		defer c.subs.Done()
		defer q.Finish()
		c.follow(ctx, principal, kinds, q, ready)
	}()
	go func() {
		defer c.subs.Done()
		defer close(out)
		defer stop()
		defer cancel()
		q.Forward(ctx, out)
	}()
	// As in process, the subscription starts before Subscribe returns:
	// once the owner has answered, its events from then on are on their
	// way, so a face that subscribes and then acts sees its own events.
	t := time.NewTimer(c.opts.Timeout)
	defer t.Stop()
	select {
	case <-ready:
	case <-ctx.Done():
	case <-t.C:
	}
	return out
}

// follow reads streams into q, reconnecting, until ctx ends, the owner
// refuses the subscription, or the owner is out of reach for giveUpAfter.
// It closes ready once the first stream is open or could not be.
func (c *Conn) follow(ctx context.Context, principal string, kinds []string, q *events.Queue, ready chan struct{}) {
	defer markReady(ready)
	want := map[string]bool{}
	for _, k := range kinds {
		want[k] = true
	}
	var (
		lastID    string
		downSince time.Time
		delay     time.Duration
	)
	for {
		r := c.stream(ctx, principal, kinds, want, &lastID, q, ready)
		markReady(ready) // the first try is over, whatever came of it
		if ctx.Err() != nil || r.refused {
			return
		}
		if r.connected || r.busy {
			downSince = time.Time{} // the owner is there
		}
		if r.delivered {
			delay = 0
		}
		if downSince.IsZero() {
			downSince = time.Now()
		}
		left := giveUpAfter - time.Since(downSince)
		if left <= 0 {
			return
		}
		if wait := min(delay, left); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		delay = min(max(2*delay, retryFirst), retryMax)
	}
}

// markReady closes ready unless it is closed; only a subscription's
// reading goroutine calls it.
func markReady(ready chan struct{}) {
	select {
	case <-ready:
	default:
		close(ready)
	}
}

// streamResult says how one stream went.
type streamResult struct {
	connected bool // the owner answered 200
	busy      bool // the owner answered 503: it serves as many streams as it may
	delivered bool // at least one message came
	refused   bool // the owner refused for good (401, 404...): do not retry
}

// stream reads one event stream until it ends. lastID is the id of the
// last event received, sent as Last-Event-ID and updated as events come.
// It closes ready, if it is open, once the owner has answered.
func (c *Conn) stream(ctx context.Context, principal string, kinds []string, want map[string]bool, lastID *string, q *events.Queue, ready chan struct{}) streamResult {
	var r streamResult
	params := url.Values{}
	if principal != "" {
		params.Set("agent", principal)
	}
	if len(kinds) > 0 {
		params["kind"] = kinds
	}
	u := c.base + wire.PathEvents
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	// What the owner sends was filtered for the stream's reader already;
	// a gap is about the stream, not any object.
	seenBy := events.Only(cmp.Or(principal, c.Agent()))
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, u, nil)
	if err != nil {
		r.refused = true
		return r
	}
	req.Header.Set("Accept", "text/event-stream")
	if *lastID != "" {
		req.Header.Set("Last-Event-ID", *lastID)
	}
	c.authorize(req)
	resp, err := c.client.Do(req)
	if err != nil {
		return r
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		// Busy (too many subscribers) may pass; anything else will not.
		r.busy = resp.StatusCode == http.StatusServiceUnavailable
		r.refused = !r.busy
		return r
	}
	if inst := resp.Header.Get(wire.HeaderInstance); inst != "" && inst != c.info.Instance {
		// Another owner serves the socket now: this connection's owner is
		// gone. The caller moves to the new one (and says so).
		r.refused = true
		return r
	}
	r.connected = true
	markReady(ready)
	watchdog := time.AfterFunc(silentStream, cancel)
	defer watchdog.Stop()

	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var (
		id, name string
		data     []byte
		hasData  bool
	)
	for {
		line, err := readLine(br)
		if err != nil {
			return r
		}
		watchdog.Reset(silentStream)
		if len(line) == 0 {
			ev, ok, end := c.message(id, name, data, hasData, want, lastID)
			id, name, data, hasData = "", "", data[:0], false
			if end {
				return r
			}
			if ok {
				r.delivered = true
				ev.Audience = seenBy
				if ev.Name == wire.EventGap {
					ev.Audience = events.Everyone()
				}
				q.Push(ev)
			}
			continue
		}
		if line[0] == ':' {
			continue // a heartbeat
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			id = string(value)
		case "event":
			name = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
			if len(data) > maxMessage {
				return r
			}
		}
	}
}

// message turns one SSE message into the event to deliver (ok), or says
// that the stream ends here (end: the owner dropped this slow stream).
func (c *Conn) message(id, name string, data []byte, hasData bool, want map[string]bool, lastID *string) (ev events.Event, ok, end bool) {
	switch name {
	case wire.EventDropped:
		return ev, false, true
	case wire.EventGap:
		return gapEvent(data), true, false
	case "":
		if !hasData {
			return ev, false, false
		}
	}
	// The id is the stream's position even for an event this reader
	// skips, so that a resumed stream does not send it again.
	if id != "" {
		*lastID = id
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return ev, false, false // not an event this program can read: skip it
	}
	if ev.Name == "" {
		ev.Name = name
	}
	if len(want) > 0 && !want[ev.Name] {
		return ev, false, false
	}
	return ev, true, false
}

// gapEvent is the event that tells a reader it missed some: its data, if
// any, as a map.
func gapEvent(data []byte) events.Event {
	ev := events.Event{Name: wire.EventGap}
	if len(data) == 0 {
		return ev
	}
	var line events.Event
	if err := json.Unmarshal(data, &line); err == nil && line.Name == wire.EventGap {
		ev.Seq, ev.At = line.Seq, line.At
		if raw, ok := line.Data.(json.RawMessage); ok {
			data = raw
		} else {
			return ev
		}
	}
	var m map[string]any
	if json.Unmarshal(data, &m) == nil && len(m) > 0 {
		ev.Data = m
	}
	return ev
}

// readLine reads one line without its line ending; a line longer than
// maxMessage is an error.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = br.ReadSlice('\n')
			long = append(long, line...)
			if len(long) > maxMessage {
				return nil, errors.New("event stream: line too long")
			}
		}
		line = long
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err // a line without its newline is cut off: not a line
	}
	line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
	return line, nil
}
