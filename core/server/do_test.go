package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/server"
	"github.com/engram-console/engram/core/wire"
)

// A run of cortex.create then cortex.get over the Unix socket answers
// with the bytes the engine gives in process.
func TestDoOverTheSocketReturnsWhatTheEngineReturnsInProcess(t *testing.T) {
	local, _ := openEngine(t)
	remote, _ := openEngine(t)
	_, c := unixServer(t, server.New(remote, server.Options{}))
	base := "http://engram"

	at := t0.Add(time.Minute)
	create := `{"action": "cortex.create", "at": "2025-11-05T10:01:00Z", "args": {"type": "goal", "id": "g1", "fields": {"title": "Ship <the> beta & more", "tags": ["launch"]}}}`
	get := `{"action": "cortex.get", "args": {"id": "g1"}}`
	wantCreate, err := local.Do(context.Background(), conn.Request{Action: "cortex.create", At: &at,
		Args: json.RawMessage(`{"type": "goal", "id": "g1", "fields": {"title": "Ship <the> beta & more", "tags": ["launch"]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	wantGet, err := local.Do(context.Background(), conn.Request{Action: "cortex.get", Args: json.RawMessage(`{"id": "g1"}`)})
	if err != nil {
		t.Fatal(err)
	}

	got := do(t, c, base, create)
	if !got.OK || got.Action != "cortex.create" || got.ElapsedUS != 0 {
		t.Fatalf("create: %+v", got)
	}
	if !bytes.Equal(got.Result, wantCreate) {
		t.Errorf("create over the socket:\n%s\nin process:\n%s", got.Result, wantCreate)
	}
	got = do(t, c, base, get)
	if !got.OK || !bytes.Equal(got.Result, wantGet) {
		t.Errorf("get over the socket:\n%s\nin process:\n%s", got.Result, wantGet)
	}
	if got.Events != nil {
		t.Errorf("events nobody asked for: %v", got.Events)
	}
	// The owner's own Do sees the same item as the client.
	direct, err := remote.Do(context.Background(), conn.Request{Action: "cortex.get", Args: json.RawMessage(`{"id": "g1"}`)})
	if err != nil || !bytes.Equal(direct, got.Result) {
		t.Errorf("in process at the owner: %s %v", direct, err)
	}
}

// Over the socket the request names its agent; without one it acts as
// the owner's agent.
func TestSocketRequestsActAsTheAgentTheyName(t *testing.T) {
	e, _ := openEngine(t)
	_, c := unixServer(t, server.New(e, server.Options{}))
	owner := func(r wire.DoResponse) string {
		var v struct {
			Item struct {
				Owner string `json:"owner"`
			} `json:"item"`
		}
		if err := json.Unmarshal(r.Result, &v); err != nil || !r.OK {
			t.Fatalf("%+v %v", r, err)
		}
		return v.Item.Owner
	}
	bobs := createGoal("b1")
	bobs["agent"] = "bob"
	if got := owner(do(t, c, "http://engram", bobs)); got != "bob" {
		t.Errorf("agent bob: owner %q", got)
	}
	if got := owner(do(t, c, "http://engram", createGoal("o1"))); got != e.Agent() {
		t.Errorf("no agent: owner %q, want %q", got, e.Agent())
	}
	// bob's goal is his: the owner's agent does not see it unshared.
	got := do(t, c, "http://engram", `{"action": "cortex.get", "args": {"id": "b1"}}`)
	if got.OK {
		t.Errorf("the owner's agent read bob's unshared goal")
	}
}

// A body that stops arriving is given up after BodyTimeout: 408, and
// nothing runs.
func TestSlowBodyIsGivenUpAfterBodyTimeout(t *testing.T) {
	e, _ := openEngine(t)
	s := server.New(e, server.Options{Limits: server.Limits{BodyTimeout: 200 * time.Millisecond}})
	sock, _ := unixServer(t, s)
	before := cortexCounts(t, e)
	slow, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = slow.Close() }()
	body := jsonOf(t, createGoal("g1"))
	if _, err := fmt.Fprintf(slow, "POST %s HTTP/1.1\r\nHost: engram\r\nContent-Length: %d\r\n\r\n%s", wire.PathDo, len(body), body[:10]); err != nil {
		t.Fatal(err)
	}
	if err := slow.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	failure(t, answer{resp.StatusCode, resp.Header, b, resp.Close}, http.StatusRequestTimeout, "BudgetError", "200ms")
	if after := cortexCounts(t, e); !maps.Equal(before, after) {
		t.Errorf("the store changed: %v → %v", before, after)
	}
}

// `at` pins the clock of its own request only: the next request, and
// the engine clock, are back at the real (here fixed) time.
func TestAtPinsOnlyItsOwnRequest(t *testing.T) {
	e, _ := openEngine(t)
	_, ts := newServer(t, e, false, server.Options{})
	c := ts.Client()

	pinned := do(t, c, ts.URL, `{"action": "cortex.create", "at": "2030-01-02T03:04:05Z", "args": {"type": "goal", "id": "a", "fields": {"title": "A"}}}`)
	plain := do(t, c, ts.URL, createGoal("b"))
	createdAt := func(r wire.DoResponse) string {
		var v struct {
			Item struct {
				CreatedAt string `json:"created_at"`
			} `json:"item"`
		}
		if err := json.Unmarshal(r.Result, &v); err != nil {
			t.Fatal(err)
		}
		return v.Item.CreatedAt
	}
	if got := createdAt(pinned); got != "2030-01-02T03:04:05Z" {
		t.Errorf("pinned request created at %s", got)
	}
	if got := createdAt(plain); got != t0.Format(time.RFC3339) {
		t.Errorf("the next request created at %s, want the engine clock %s", got, t0.Format(time.RFC3339))
	}
	if !e.Now().Equal(t0) {
		t.Errorf("engine clock %s after the pinned request", e.Now())
	}
}

// events:true returns the events the request caused, in order.
func TestEventsTrueReturnsTheRequestsEvents(t *testing.T) {
	e, _ := openEngine(t)
	_, ts := newServer(t, e, false, server.Options{})
	req := createGoal("g1")
	req["events"] = true
	got := do(t, ts.Client(), ts.URL, req)
	if !got.OK {
		t.Fatalf("%+v", got)
	}
	var mutated int
	for i, ev := range got.Events {
		if i > 0 && ev.Seq <= got.Events[i-1].Seq {
			t.Errorf("events out of order: %v", got.Events)
		}
		if data, ok := cortex.EventItemMutated.Of(ev); ok {
			mutated++
			if data.ItemID != "g1" {
				t.Errorf("item.mutated of %+v", data)
			}
		}
	}
	if mutated != 1 {
		t.Errorf("want one item.mutated, got %+v", got.Events)
	}
}

// Malformed requests get their documented status and a JSON error, and
// change nothing stored; an action that fails is a 200 with ok:false.
func TestMalformedRequestsAreRefusedAndChangeNothing(t *testing.T) {
	e, _ := openEngine(t)
	_, ts := newServer(t, e, false, server.Options{Limits: server.Limits{MaxBody: 1024}})
	c := ts.Client()
	do(t, c, ts.URL, createGoal("g1"))
	before := cortexCounts(t, e)

	refusals := []struct {
		name, method, path, body string
		status                   int
		kind                     string
		fragments                []string
	}{
		{"bad JSON", "POST", wire.PathDo, `{"action": "cortex.create",`, 400, "ParseError", []string{"not valid JSON"}},
		{"not an object", "POST", wire.PathDo, `["cortex.create"]`, 400, "ValidationError", []string{"JSON object", "array"}},
		{"empty body", "POST", wire.PathDo, ``, 400, "ValidationError", []string{"empty"}},
		{"unknown field", "POST", wire.PathDo, `{"action": "cortex.create", "agnt": "bob", "args": {"type": "goal", "fields": {"title": "X"}}}`,
			400, "ValidationError", []string{`"agnt"`, `did you mean "agent"`}},
		{"field of the wrong type", "POST", wire.PathDo, `{"action": 5}`, 400, "ValidationError", []string{"action: expected a string, got a number"}},
		{"bad at", "POST", wire.PathDo, `{"action": "cortex.create", "at": "yesterday"}`, 400, "ValidationError", []string{"at:", "RFC 3339"}},
		{"no action", "POST", wire.PathDo, `{"args": {}}`, 400, "ValidationError", []string{"action: required"}},
		{"oversized body", "POST", wire.PathDo, `{"action": "cortex.create", "args": {"type": "goal", "fields": {"title": "` + strings.Repeat("x", 2000) + `"}}}`,
			413, "BudgetError", []string{"1 KiB", "split"}},
		{"wrong method", "GET", wire.PathDo, ``, 405, "ValidationError", []string{"POST"}},
		{"wrong method on info", "POST", wire.PathInfo, `{}`, 405, "ValidationError", []string{"GET"}},
		{"unknown path", "POST", "/v1/run", `{"action": "cortex.create"}`, 404, "NotFoundError", []string{"/v1/run", wire.PathDo}},
	}
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			a := send(t, c, r.method, ts.URL+r.path, r.body)
			f := failure(t, a, r.status, r.kind, r.fragments...)
			if r.status == 405 && a.Header.Get("Allow") == "" {
				t.Errorf("405 without Allow")
			}
			if r.name == "unknown field" && f.Error.Details["field"] != "agnt" {
				t.Errorf("details %v do not name the field", f.Error.Details)
			}
		})
	}
	// An oversized body sent without a length (chunked) is cut at the limit.
	t.Run("oversized chunked body", func(t *testing.T) {
		body := io.MultiReader(strings.NewReader(`{"action": "cortex.create", "args": {"type": "goal", "fields": {"title": "`),
			strings.NewReader(strings.Repeat("x", 4000)), strings.NewReader(`"}}}`))
		req, _ := http.NewRequest(http.MethodPost, ts.URL+wire.PathDo, body)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		failure(t, answer{resp.StatusCode, resp.Header, b, resp.Close}, 413, "BudgetError")
	})

	failures := []struct {
		name, body, kind, fragment string
	}{
		{"unknown action", `{"action": "cortex.creat", "args": {}}`, "UnknownAction", `did you mean "cortex.create"`},
		{"wrong arg types", `{"action": "cortex.create", "args": {"type": "goal", "fields": {"title": 5}}}`, "ValidationError", "title"},
		{"unknown arg", `{"action": "cortex.create", "args": {"type": "goal", "tittle": "x", "fields": {"title": "x"}}}`, "ValidationError", "tittle"},
	}
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			got := do(t, c, ts.URL, f.body)
			if got.OK || got.Error == nil || string(got.Error.Kind) != f.kind || !strings.Contains(got.Error.Message, f.fragment) {
				t.Errorf("want ok:false %s with %q, got %+v", f.kind, f.fragment, got.Error)
			}
		})
	}
	if after := cortexCounts(t, e); !maps.Equal(before, after) {
		t.Errorf("the store changed: %v → %v", before, after)
	}
}

// A client that sends half a request line and stops is cut off after
// HeaderTimeout, and the owner answers others meanwhile.
func TestSlowlorisIsCutOffAfterHeaderTimeout(t *testing.T) {
	e, _ := openEngine(t)
	s := server.New(e, server.Options{Limits: server.Limits{HeaderTimeout: 200 * time.Millisecond}})
	sock, c := unixServer(t, s)

	slow, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = slow.Close() }()
	if _, err := slow.Write([]byte("POST /v1/do HT")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := do(t, c, "http://engram", `{"action": "engine.info"}`)
	if !got.OK {
		t.Fatalf("a normal request beside the slow one: %+v", got)
	}
	// Well above the timeout: the read ends at EOF when the owner
	// closes the connection, or fails at this deadline if it does not.
	if err := slow.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(slow); err != nil {
		t.Fatalf("the slow connection was not closed: %v", err)
	}
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Errorf("closed after %s, before the header timeout", waited)
	}
}

// With MaxConcurrent requests running and no slot free within
// QueueWait, a request gets 503 Unavailable and runs nothing.
func TestBusyOwnerAnswers503(t *testing.T) {
	e, g := openEngine(t)
	_, ts := newServer(t, e, false, server.Options{Limits: server.Limits{MaxConcurrent: 1, QueueWait: 20 * time.Millisecond}})
	c := ts.Client()
	before := cortexCounts(t, e)

	first := make(chan wire.DoResponse, 1)
	go func() {
		a := send(t, c, http.MethodPost, ts.URL+wire.PathDo, `{"action": "test.wait"}`)
		var r wire.DoResponse
		_ = json.Unmarshal(a.Body, &r)
		first <- r
	}()
	<-g.entered // the first request holds the only slot
	a := send(t, c, http.MethodPost, ts.URL+wire.PathDo, jsonOf(t, createGoal("g1")))
	failure(t, a, http.StatusServiceUnavailable, "Unavailable", "busy")
	if a.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	close(g.release)
	if r := <-first; !r.OK {
		t.Errorf("the request in flight: %+v", r)
	}
	if after := cortexCounts(t, e); !maps.Equal(before, after) {
		t.Errorf("the refused request changed the store: %v → %v", before, after)
	}
	// The slot is free again.
	if r := do(t, c, ts.URL, createGoal("g1")); !r.OK {
		t.Errorf("after the slot came free: %+v", r)
	}
}

// panicky is an engine whose Do panics: a bug in the owner.
type panicky struct{ *core.Engine }

func (panicky) Do(context.Context, conn.Request) (json.RawMessage, error) { panic("boom") }

// A panic while handling a request answers 500 Internal, and the owner
// goes on serving.
func TestPanicInAHandlerIsA500(t *testing.T) {
	e, _ := openEngine(t)
	_, ts := newServer(t, panicky{e}, false, server.Options{})
	a := send(t, ts.Client(), http.MethodPost, ts.URL+wire.PathDo, `{"action": "engine.info"}`)
	failure(t, a, http.StatusInternalServerError, "Internal", "boom")
	if a := send(t, ts.Client(), http.MethodGet, ts.URL+wire.PathInfo, ""); a.Status != http.StatusOK {
		t.Errorf("after the panic: %d %s", a.Status, a.Body)
	}
}

// /v1/info is engine.info with the owner's pid, instance, clock and
// action list.
func TestInfoDescribesTheOwner(t *testing.T) {
	e, _ := openEngine(t)
	s, ts := newServer(t, e, false, server.Options{Instance: "inst1", PID: 42})
	a := send(t, ts.Client(), http.MethodGet, ts.URL+wire.PathInfo, "")
	if a.Status != http.StatusOK || a.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %v %s", a.Status, a.Header, a.Body)
	}
	var info wire.InfoResponse
	if err := json.Unmarshal(a.Body, &info); err != nil {
		t.Fatal(err)
	}
	if info.PID != 42 || info.Instance != "inst1" || s.Instance() != "inst1" || !info.Now.Equal(t0) || info.Agent != e.Agent() {
		t.Errorf("info %+v", info)
	}
	acts := e.Actions()
	if len(info.ActionList) != len(acts) || info.Actions != len(acts) {
		t.Fatalf("%d actions listed, the engine has %d", len(info.ActionList), len(acts))
	}
	for i, a := range acts {
		if info.ActionList[i] != (wire.ActionSummary{Name: a.Name, ReadOnly: a.ReadOnly, Secret: a.Secret, Resend: a.Joinable && !a.ReadOnly && !a.Secret}) {
			t.Errorf("action %d: %+v, want %s read-only %v", i, info.ActionList[i], a.Name, a.ReadOnly)
		}
	}
	if s2 := server.New(e, server.Options{}); s2.Instance() == "" || s2.Instance() == s.Instance() {
		t.Errorf("generated instance %q", s2.Instance())
	} else if err := s2.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

// A request over the socket carries the agent client it is made for
// (engram mcp attached to the owner sends it): the owner counts the call,
// and a client that is not an object is refused, naming the field.
func TestSocketRequestsCarryTheirAgentClient(t *testing.T) {
	e, _ := openEngine(t)
	_, c := unixServer(t, server.New(e, server.Options{}))
	got := do(t, c, "http://engram", `{"action": "memory.stores", "client": {"session": "s-1", "via": "mcp", "name": "claude-desktop", "transport": "stdio", "pid": 4242, "tool": "memory_stats", "call": "1"}}`)
	if !got.OK {
		t.Fatalf("a request with its client: %+v", got.Error)
	}
	list := do(t, c, "http://engram", `{"action": "clients.list", "args": {"all": true}}`)
	var v struct {
		Clients []struct {
			Session  string `json:"session"`
			LastCall string `json:"last_call"`
		} `json:"clients"`
	}
	if err := json.Unmarshal(list.Result, &v); err != nil || len(v.Clients) != 1 || v.Clients[0].Session != "s-1" || v.Clients[0].LastCall != "memory_stats" {
		t.Fatalf("clients.list after a client's request over the socket: %s %v", list.Result, err)
	}
	bad := failure(t, send(t, c, "POST", "http://engram"+wire.PathDo, `{"action": "memory.stores", "client": "claude"}`),
		400, "ValidationError", "client: expected an object")
	if bad.Error.Details["field"] != "client" {
		t.Errorf("a client that is a string: details %v do not name the field", bad.Error.Details)
	}
}

// Inside client, as at the top of the body, a field of the wrong type is
// named, and an unknown one (a misspelt name) is refused, not dropped.
func TestARequestsClientIsDecodedStrictly(t *testing.T) {
	e, _ := openEngine(t)
	_, c := unixServer(t, server.New(e, server.Options{}))
	for _, r := range []struct{ client, fragment string }{
		{`{"session": "s-1", "via": "mcp", "tool": "recall", "call": "1", "pid": "4242"}`, "pid"},
		{`{"session": "s-1", "via": "mcp", "tool": "recall", "call": "1", "nmae": "claude"}`, "nmae"},
	} {
		bad := failure(t, send(t, c, "POST", "http://engram"+wire.PathDo, `{"action": "memory.stores", "client": `+r.client+`}`),
			400, "ValidationError", r.fragment)
		if bad.Error.Details["field"] != "client" {
			t.Errorf("client %s: details %v do not name the field", r.client, bad.Error.Details)
		}
	}
}
