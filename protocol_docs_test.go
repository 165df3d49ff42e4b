//go:build !noplanning

// docs/protocol.md's examples run against the full build's engine, as
// docs/batch.md's do, so these tests run only in it.

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/server"
	"github.com/engram-console/engram/core/wire"
)

const protocolDocsPath = "docs/protocol.md"

// The owner the examples talk to: its instance id (in every event id) and
// pid are fixed, so that what it answers repeats.
const (
	docsInstance = "docs"
	docsPID      = 4242
)

// docsTokens are the example tokens docs/protocol.md shows. Real tokens come
// from core/tokens (engram token create); the test's authenticator accepts
// these two, and nothing else, so that the TCP examples need no store of
// tokens.
var docsTokens = map[string]server.Principal{
	"egt_3c9e1f0a7b52_bzxcnnkd0vwUiQ0DhXSGovyQt8EIjlDLvGTi0YOyX-I": {Agent: "ci"},
	"egt_8d41b6e2c0f9_05hT1y9OnX7wBQMHXa6u8RrmChBkyPRwoRQSnnefc9U": {Agent: "dashboard", ReadOnly: true},
}

// docsAuthenticator accepts docsTokens.
type docsAuthenticator struct{}

func (docsAuthenticator) Authenticate(_ context.Context, token string) (server.Principal, error) {
	p, ok := docsTokens[token]
	if !ok {
		return server.Principal{}, errors.New("not an example token")
	}
	return p, nil
}

// httpExample is one request of docs/protocol.md and the response it shows.
type httpExample struct {
	line    int // of the request block, for messages
	method  string
	target  string
	headers [][2]string // in the order written
	body    string      // exactly as sent ("" for none)

	// The response block: its content's byte range in the file, and what
	// it shows.
	respStart, respEnd int
	status             int
	respHeaders        [][2]string
	respBody           string
}

// tcp says whether the example goes over TCP: it names a Host, as a
// request to the address of engram serve --listen does; the socket's
// examples name none.
func (x httpExample) tcp() bool { return x.header("Host") != "" }

func (x httpExample) header(name string) string {
	for _, h := range x.headers {
		if strings.EqualFold(h[0], name) {
			return h[1]
		}
	}
	return ""
}

// stream says whether the response is a Server-Sent Events stream.
func (x httpExample) stream() bool {
	for _, h := range x.respHeaders {
		if strings.EqualFold(h[0], "Content-Type") && strings.HasPrefix(h[1], "text/event-stream") {
			return true
		}
	}
	return false
}

var (
	httpFence    = regexp.MustCompile("(?m)^```http\n((?s:.*?))^```\n")
	requestLine  = regexp.MustCompile(`^(GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) (\S+)(?: HTTP/1\.1)?$`)
	responseLine = regexp.MustCompile(`^HTTP/1\.1 (\d{3})(?: .*)?$`)
)

// splitHTTP splits a block into its first line, its header lines and its
// body (what follows the first blank line, without the final newline).
func splitHTTP(block string) (first string, headers [][2]string, body string, err error) {
	head, body, _ := strings.Cut(block, "\n\n")
	body = strings.TrimSuffix(body, "\n")
	lines := strings.Split(strings.TrimSuffix(head, "\n"), "\n")
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return "", nil, "", fmt.Errorf("%q is not a header line (NAME: VALUE); a blank line goes before the body", l)
		}
		headers = append(headers, [2]string{name, strings.TrimSpace(value)})
	}
	return lines[0], headers, body, nil
}

// readProtocolExamples parses every ```http request block of the doc and
// the ```http response block that must follow it.
func readProtocolExamples(t *testing.T) (string, []httpExample) {
	t.Helper()
	raw, err := os.ReadFile(protocolDocsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	lineOf := func(at int) int { return strings.Count(doc[:at], "\n") + 1 }
	var out []httpExample
	var pending *httpExample
	for _, m := range httpFence.FindAllStringSubmatchIndex(doc, -1) {
		block := doc[m[2]:m[3]]
		first, headers, body, err := splitHTTP(block)
		if err != nil {
			t.Fatalf("%s:%d: %v", protocolDocsPath, lineOf(m[0]), err)
		}
		if rm := responseLine.FindStringSubmatch(first); rm != nil {
			if pending == nil {
				t.Fatalf("%s:%d: a response with no request block before it", protocolDocsPath, lineOf(m[0]))
			}
			pending.status, _ = strconv.Atoi(rm[1])
			pending.respHeaders, pending.respBody = headers, body
			pending.respStart, pending.respEnd = m[2], m[3]
			out = append(out, *pending)
			pending = nil
			continue
		}
		qm := requestLine.FindStringSubmatch(first)
		if qm == nil {
			t.Fatalf("%s:%d: an ```http block starts with a request line (POST /v1/do) or a status line (HTTP/1.1 200 OK), not %q",
				protocolDocsPath, lineOf(m[0]), first)
		}
		if pending != nil {
			t.Fatalf("%s:%d: the request of line %d has no response block", protocolDocsPath, lineOf(m[0]), pending.line)
		}
		pending = &httpExample{line: lineOf(m[0]), method: qm[1], target: qm[2], headers: headers, body: body}
	}
	if pending != nil {
		t.Fatalf("%s:%d: the last request has no response block", protocolDocsPath, pending.line)
	}
	return doc, out
}

// protocolOwner is the owner the examples talk to: one engine, served on
// the socket's routes and on the TCP routes, and a stream that watches
// which events the server has taken in.
type protocolOwner struct {
	engine      *core.Engine
	socket, tcp *httptest.Server
	published   func() uint64 // the highest seq the engine has published
	seen        chan uint64   // the watcher's ids, as they come
	last        uint64        // the highest seq the watcher has shown
}

func newProtocolOwner(t *testing.T) *protocolOwner {
	t.Helper()
	e, err := core.Open(engineOptions(core.Options{InMemory: true, Clock: clock.NewFixed(time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)), IDSeed: "docs"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	tap := e.Env().Events.Tap(1 << 16)
	var mu sync.Mutex
	var published uint64
	s := server.New(e, server.Options{Instance: docsInstance, PID: docsPID, Tokens: docsAuthenticator{},
		MCP: mcpOverHTTP(nil)(e)})
	o := &protocolOwner{engine: e, socket: httptest.NewServer(s.Handler(false)), tcp: httptest.NewServer(s.Handler(true)),
		seen: make(chan uint64, 1<<16)}
	o.published = func() uint64 {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range tap.Drain() {
			// The watcher streams as the owner's agent: it sees only
			// what that agent may.
			if ev.VisibleTo(e.Agent()) {
				published = max(published, ev.Seq)
			}
		}
		return published
	}
	t.Cleanup(func() {
		tap.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutting the server down: %v", err)
		}
		o.socket.Close()
		o.tcp.Close()
	})

	// The watcher: an event stream open from the start. An event it has
	// shown is in the server's replay memory, so a resumed stream
	// replays it (rather than sending it live, after ": ok").
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.socket.URL+wire.PathEvents, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := o.socket.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan struct{})
	go func() {
		defer func() { _ = resp.Body.Close() }()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if line == ": ok" {
				close(opened)
			}
			if id, ok := strings.CutPrefix(line, "id: "); ok {
				if _, seq, ok := wire.ParseEventID(id); ok {
					o.seen <- seq
				}
			}
		}
	}()
	select {
	case <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher's event stream did not open")
	}
	return o
}

// settle waits until the server has taken in every event the engine has
// published so far.
func (o *protocolOwner) settle(t *testing.T) {
	t.Helper()
	want := o.published()
	deadline := time.After(10 * time.Second)
	for o.last < want {
		select {
		case seq := <-o.seen:
			o.last = max(o.last, seq)
		case <-deadline:
			t.Fatalf("the server did not take in event %d within 10s (it has %d)", want, o.last)
		}
	}
}

// TestProtocolDocsExamples runs docs/protocol.md's examples in order against
// one owner (a fresh in-memory engine on a fixed clock): each request gets
// the status, the headers and the body its response block shows. A JSON body
// may leave members out, and a list may end with "..." after its first
// elements; every member shown must be exactly what the owner answers. An
// event stream shows what it sends up to its ": ok" comment, exactly. go
// test . -run TestProtocolDocs -update-docs rewrites the responses after a
// deliberate change.
func TestProtocolDocsExamples(t *testing.T) {
	doc, examples := readProtocolExamples(t)
	if len(examples) == 0 {
		t.Fatalf("%s has no examples", protocolDocsPath)
	}
	o := newProtocolOwner(t)
	var rewritten strings.Builder
	last := 0
	for _, x := range examples {
		where := fmt.Sprintf("%s:%d (%s %s)", protocolDocsPath, x.line, x.method, x.target)
		if x.target == wire.PathDo && x.status == http.StatusOK && !pinned(x.body) {
			t.Errorf("%s: give the request an \"at\": an action's answer repeats only on a pinned clock (elapsed_us is 0 only then)", where)
		}
		if x.stream() {
			o.settle(t)
		}
		resp, body := o.send(t, x, where)
		if *updateDocs {
			rewritten.WriteString(doc[last:x.respStart])
			rewritten.WriteString(renderResponse(t, x, resp, body))
			last = x.respEnd
			continue
		}
		if resp.StatusCode != x.status {
			t.Errorf("%s: status %d, documented %d\n--- body\n%s", where, resp.StatusCode, x.status, body)
			continue
		}
		for _, h := range x.respHeaders {
			if got := responseHeader(resp, h[0]); got != h[1] {
				t.Errorf("%s: header %s is %q, documented %q", where, h[0], got, h[1])
			}
		}
		if x.stream() {
			if !strings.HasSuffix(x.respBody, streamOpened) {
				t.Errorf("%s: a stream's example shows what it sends up to and including %q", where, streamOpened)
			}
			if body != x.respBody {
				t.Errorf("%s: the stream sends something else now (run go test . -run TestProtocolDocs -update-docs if the change is deliberate)\n--- actual\n%s\n--- documented\n%s",
					where, body, x.respBody)
			}
			continue
		}
		var documented, actual any
		if err := json.Unmarshal([]byte(x.respBody), &documented); err != nil {
			t.Errorf("%s: the documented body is not JSON: %v", where, err)
			continue
		}
		if err := json.Unmarshal([]byte(body), &actual); err != nil {
			t.Errorf("%s: the owner answered a body that is not JSON: %v\n%s", where, err, body)
			continue
		}
		if at := shown(documented, actual, "body"); at != "" {
			t.Errorf("%s: the owner answers something else now at %s (run go test . -run TestProtocolDocs -update-docs if the change is deliberate)\n--- actual\n%s",
				where, at, body)
		}
	}
	if *updateDocs {
		rewritten.WriteString(doc[last:])
		if err := os.WriteFile(protocolDocsPath, []byte(rewritten.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// pinned says whether a request body pins the clock.
func pinned(body string) bool {
	var req struct {
		At *string `json:"at"`
	}
	return json.Unmarshal([]byte(body), &req) == nil && req.At != nil
}

// send makes x's request and returns the response and its body: all of
// it, or for a stream what it sends up to its ": ok".
func (o *protocolOwner) send(t *testing.T, x httpExample, where string) (*http.Response, string) {
	t.Helper()
	ts := o.socket
	if x.tcp() {
		ts = o.tcp
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var body io.Reader
	if x.body != "" {
		body = strings.NewReader(x.body)
	}
	req, err := http.NewRequestWithContext(ctx, x.method, ts.URL+x.target, body)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	for _, h := range x.headers {
		if strings.EqualFold(h[0], "Host") {
			req.Host = h[1]
			continue
		}
		req.Header.Add(h[0], h[1])
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if !x.stream() || resp.StatusCode != http.StatusOK {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s: reading the body: %v", where, err)
		}
		return resp, strings.TrimSuffix(string(b), "\n")
	}
	// A stream never ends by itself: what it sends up to its ": ok" (the
	// gap, the replayed events) is all it owes the request; after that
	// come live events, whenever they happen. Read to ": ok", then hang up.
	var msgs []string
	var msg []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() != "" {
			msg = append(msg, sc.Text())
			continue
		}
		msgs = append(msgs, strings.Join(msg, "\n"))
		if strings.Join(msg, "\n") == streamOpened {
			return resp, strings.Join(msgs, "\n\n")
		}
		msg = nil
	}
	t.Fatalf("%s: the stream ended before its %q, after %d messages: %v", where, streamOpened, len(msgs), sc.Err())
	return nil, ""
}

// streamOpened is the comment a stream sends once it is subscribed: what it
// sends before is the gap and the replay; what it sends after is live.
const streamOpened = ": ok"

// responseHeader is a header of resp as the server sent it. Go's client
// takes "Connection: close" out of the header and sets resp.Close.
func responseHeader(resp *http.Response, name string) string {
	if strings.EqualFold(name, "Connection") && resp.Close {
		return "close"
	}
	return resp.Header.Get(name)
}

// renderResponse is the response block's new content: the status line,
// the headers the block shows (with their values now), and the body, cut
// to the members and elements the block shows (all of it when the block
// shows none).
func renderResponse(t *testing.T, x httpExample, resp *http.Response, body string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\n", resp.StatusCode, http.StatusText(resp.StatusCode))
	for _, h := range x.respHeaders {
		if v := responseHeader(resp, h[0]); v != "" {
			fmt.Fprintf(&b, "%s: %s\n", h[0], v)
		}
	}
	b.WriteString("\n")
	if x.stream() && resp.StatusCode == http.StatusOK {
		b.WriteString(body + "\n")
		return b.String()
	}
	var documented any
	if err := json.Unmarshal([]byte(x.respBody), &documented); err != nil {
		documented = nil // a new example: show everything
	}
	var out bytes.Buffer
	if err := project(json.RawMessage(body), documented, &out); err != nil {
		t.Fatalf("re-encoding %s: %v", body, err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, out.Bytes(), "", "  "); err != nil {
		t.Fatalf("indenting %s: %v", out.Bytes(), err)
	}
	b.WriteString(indented.String() + "\n")
	return b.String()
}

// project copies the JSON value raw to b in the owner's member order,
// keeping only the members and elements documented shows (everything but
// the noisy members where documented shows nothing, or something else).
func project(raw json.RawMessage, documented any, b *bytes.Buffer) error {
	raw = bytes.TrimSpace(raw)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	d, isList := documented.([]any)
	m, isObject := documented.(map[string]any)
	switch {
	case isObject && len(raw) > 0 && raw[0] == '{':
		if _, err := dec.Token(); err != nil {
			return err
		}
		b.WriteByte('{')
		first := true
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return err
			}
			dv, show := m[key.(string)]
			if !show {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			k, _ := json.Marshal(key)
			b.Write(k)
			b.WriteByte(':')
			if err := project(v, dv, b); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case isList && len(raw) > 0 && raw[0] == '[':
		if _, err := dec.Token(); err != nil {
			return err
		}
		n, cut := elides(d)
		b.WriteByte('[')
		i := 0
		for ; dec.More(); i++ {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return err
			}
			if cut && i >= n {
				continue
			}
			if i > 0 {
				b.WriteByte(',')
			}
			var dv any
			if i < len(d) {
				dv = d[i]
			}
			if err := project(v, dv, b); err != nil {
				return err
			}
		}
		if cut && i > n {
			if n > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(elided))
		}
		b.WriteByte(']')
		return nil
	}
	return copyWithout(dec, b)
}

// TestProtocolDocsCoverTheWire: docs/protocol.md names every endpoint, field,
// limit and stream event of core/wire, so that the protocol cannot grow a
// part the documentation does not describe.
func TestProtocolDocsCoverTheWire(t *testing.T) {
	raw, err := os.ReadFile(protocolDocsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, n := range []string{wire.PathDo, wire.PathInfo, wire.PathEvents, wire.PathMCP, "/" + wire.SocketName} {
		if !strings.Contains(doc, n) {
			t.Errorf("%s does not name %s", protocolDocsPath, n)
		}
	}
	// Every field of every body, by its JSON name. engine.info's own
	// fields, in /v1/info's body, are batch.md's.
	fields := func(v any) map[string]any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	names := []string{wire.EventGap, wire.EventDropped,
		// Fields left out when empty.
		"args", "agent", "turn", "at", "session", "idempotency_key", "events", "action", "result", "error", "details"}
	for _, v := range []any{wire.DoRequest{}, wire.DoResponse{}, wire.ErrorBody{}, wire.ActionSummary{}} {
		for k := range fields(v) {
			names = append(names, k)
		}
	}
	engineInfo := fields(conn.Info{})
	for k := range fields(wire.InfoResponse{}) {
		if _, ok := engineInfo[k]; !ok {
			names = append(names, k)
		}
	}
	for _, n := range names {
		if !strings.Contains(doc, "`"+n+"`") {
			t.Errorf("%s does not describe `%s`", protocolDocsPath, n)
		}
	}
	limits := map[string]string{
		"MaxBody":         "8 MiB",
		"MaxConcurrent":   strconv.Itoa(wire.MaxConcurrent),
		"QueueWait":       human(wire.QueueWait),
		"MaxSubscribers":  strconv.Itoa(wire.MaxSubscribers),
		"SubscriberQueue": strconv.Itoa(wire.SubscriberQueue),
		"Replay":          strconv.Itoa(wire.Replay),
		"HeaderTimeout":   human(wire.HeaderTimeout),
		"BodyTimeout":     human(wire.BodyTimeout),
		"IdleTimeout":     human(wire.IdleTimeout),
		"Heartbeat":       human(wire.Heartbeat),
	}
	if wire.MaxBody != 8<<20 {
		t.Errorf("wire.MaxBody is %d: say so in %s and here", wire.MaxBody, protocolDocsPath)
	}
	for name, value := range limits {
		row := regexp.MustCompile("(?m)^\\|[^\n]*`" + name + "`[^\n]*\\|[^\n]*" + regexp.QuoteMeta(value) + "[^\n]*$")
		if !row.MatchString(doc) {
			t.Errorf("%s: the limits table has no row for `%s` saying %s", protocolDocsPath, name, value)
		}
	}
}

// human is a duration as the limits table writes it: "10 s", "2 min".
func human(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		return strconv.Itoa(int(d/time.Minute)) + " min"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}
