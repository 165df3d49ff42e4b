package clients

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/core/conn"
)

var t0 = time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)

// call is a request of session's client calling tool, as call id.
func call(session, tool, id string) conn.ClientCall {
	return conn.ClientCall{Session: session, Via: "mcp", Name: "claude-desktop", Version: "1.2.0", Transport: "stdio", Tool: tool, Call: id}
}

// always is an alive check that answers alive for every process.
func always(int) bool { return true }

// TestRecordCountsCallsByCallIDAndErrorsOncePerFailedCall: one call may
// take several requests; it counts once, and a call that failed in more
// than one of its requests is one error.
func TestRecordCountsCallsByCallIDAndErrorsOncePerFailedCall(t *testing.T) {
	r := New(1, always)
	r.Record("local", call("s-1", "recall", "1"), t0, false, "")
	r.Record("local", call("s-1", "recall", "1"), t0.Add(time.Second), false, "") // the same call's second request
	r.Record("local", call("s-1", "forget", "2"), t0.Add(2*time.Second), true, "first")
	r.Record("local", call("s-1", "forget", "2"), t0.Add(3*time.Second), true, "second") // the same failed call again
	c, _ := r.Record("local", call("s-1", "update_goal", "3"), t0.Add(4*time.Second), true, "stale version")
	if c.Calls != 3 {
		t.Errorf("calls = %d, want 3 (call ids 1, 2, 3)", c.Calls)
	}
	if c.Errors != 2 {
		t.Errorf("errors = %d, want 2 (calls 2 and 3 failed)", c.Errors)
	}
	if c.LastCall != "update_goal" || c.LastAt == nil || !c.LastAt.Equal(t0.Add(4*time.Second)) || c.LastError != "stale version" {
		t.Errorf("last = %q at %v, error %q; want update_goal at +4s, \"stale version\"", c.LastCall, c.LastAt, c.LastError)
	}
	// A success keeps the last error: it says what went wrong last.
	c, _ = r.Record("local", call("s-1", "recall", "4"), t0.Add(5*time.Second), false, "")
	if c.Calls != 4 || c.Errors != 2 || c.LastError != "stale version" {
		t.Errorf("after a success: %d calls, %d errors, last error %q", c.Calls, c.Errors, c.LastError)
	}
	if !c.Since.Equal(t0) || c.Name != "claude-desktop" || c.Version != "1.2.0" || c.Transport != "stdio" || c.Via != "mcp" {
		t.Errorf("the client's description: %+v", c)
	}
}

// TestAClientSeenAgainAfterDisconnectIsConnectedAnew: fresh is true on the
// first request, and again on the first after a disconnect.
func TestAClientSeenAgainAfterDisconnectIsConnectedAnew(t *testing.T) {
	r := New(1, always)
	if _, fresh := r.Record("local", call("s-1", "recall", "1"), t0, false, ""); !fresh {
		t.Error("the first request of a client is not fresh")
	}
	if _, fresh := r.Record("local", call("s-1", "recall", "2"), t0, false, ""); fresh {
		t.Error("the second request of a connected client is fresh")
	}
	if _, ok := r.Disconnect("bob", "s-1", t0); ok {
		t.Error("another agent disconnected local's client")
	}
	gone, ok := r.Disconnect("local", "s-1", t0.Add(time.Minute))
	if !ok || gone.Connected || gone.GoneAt == nil || !gone.GoneAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("Disconnect = %+v, %v; want gone at +1m", gone, ok)
	}
	if _, ok := r.Disconnect("local", "s-1", t0.Add(2*time.Minute)); ok {
		t.Error("a client already gone was disconnected again")
	}
	c, fresh := r.Record("local", call("s-1", "recall", "3"), t0.Add(3*time.Minute), false, "")
	if !fresh || !c.Connected || c.GoneAt != nil {
		t.Errorf("seen again after its disconnect: fresh %v, %+v; want connected anew", fresh, c)
	}
	if c.Calls != 3 || !c.Since.Equal(t0) {
		t.Errorf("seen again: %d calls since %v; want its 3 calls since it was first seen", c.Calls, c.Since)
	}
}

// TestListOrdersConnectedFirstThenNewestLastCall, and an agent's list
// holds only its clients.
func TestListOrdersConnectedFirstThenNewestLastCall(t *testing.T) {
	r := New(1, always)
	r.Record("local", call("old", "recall", "1"), t0, false, "")
	r.Record("local", call("gone-late", "recall", "1"), t0.Add(5*time.Minute), false, "")
	r.Record("bob", call("bob-1", "recall", "1"), t0.Add(2*time.Minute), false, "")
	r.Record("local", call("new", "recall", "1"), t0.Add(3*time.Minute), false, "")
	r.Record("local", call("gone-early", "recall", "1"), t0.Add(time.Minute), false, "")
	r.Disconnect("local", "gone-late", t0.Add(6*time.Minute))
	r.Disconnect("local", "gone-early", t0.Add(7*time.Minute))
	sessions := func(list []Client) []string {
		var out []string
		for _, c := range list {
			out = append(out, c.Session)
		}
		return out
	}
	all, _ := r.List("", t0.Add(8*time.Minute))
	if got, want := sessions(all), []string{"new", "bob-1", "old", "gone-late", "gone-early"}; !slices.Equal(got, want) {
		t.Errorf("List(all) = %v, want %v (connected first, then the newest last call)", got, want)
	}
	mine, _ := r.List("local", t0.Add(8*time.Minute))
	if got, want := sessions(mine), []string{"new", "old", "gone-late", "gone-early"}; !slices.Equal(got, want) {
		t.Errorf("List(local) = %v, want %v", got, want)
	}
	bobs, _ := r.List("bob", t0.Add(8*time.Minute))
	if got := sessions(bobs); !slices.Equal(got, []string{"bob-1"}) {
		t.Errorf("List(bob) = %v, want [bob-1]", got)
	}
}

// TestListMarksTheClientsOfProcessesGoneAndReturnsThemOnce: a client
// whose engram mcp process no longer runs is gone, announced by the first
// List that finds it; the owner's own clients (pid 0, or its pid) are
// never checked.
func TestListMarksTheClientsOfProcessesGoneAndReturnsThemOnce(t *testing.T) {
	const self = 10
	dead := map[int]bool{200: true}
	var asked []int
	r := New(self, func(pid int) bool {
		asked = append(asked, pid)
		return !dead[pid]
	})
	withPID := func(session string, pid int) conn.ClientCall {
		c := call(session, "recall", "1")
		c.PID = pid
		return c
	}
	r.Record("local", withPID("owner-served", 0), t0, false, "")
	r.Record("local", withPID("self", self), t0, false, "")
	r.Record("local", withPID("alive", 100), t0, false, "")
	r.Record("bob", withPID("dead", 200), t0, false, "")
	at := t0.Add(time.Minute)
	list, gone := r.List("local", at) // bob's client is found gone too: the process is the same for all
	if len(gone) != 1 || gone[0].Session != "dead" || gone[0].Connected || gone[0].GoneAt == nil || !gone[0].GoneAt.Equal(at) {
		t.Fatalf("gone = %+v, want the client of pid 200, gone at %v", gone, at)
	}
	if len(list) != 3 {
		t.Errorf("local's list has %d clients, want 3", len(list))
	}
	if slices.Contains(asked, 0) || slices.Contains(asked, self) {
		t.Errorf("asked whether pids %v run: never 0 (the owner serves it) nor its own", asked)
	}
	all, gone := r.List("", t0.Add(2*time.Minute))
	if len(gone) != 0 {
		t.Errorf("a second List announced %+v again", gone)
	}
	if last := all[len(all)-1]; last.Session != "dead" || last.Connected {
		t.Errorf("the dead process's client is not listed last, gone: %+v", last)
	}
	// A process that comes back (its pid reused) does not revive a client:
	// only its next request does.
	delete(dead, 200)
	if all, _ := r.List("bob", t0.Add(3*time.Minute)); all[0].Connected {
		t.Error("a client found gone was connected again by List")
	}
}

// TestTrimKeepsAtMostMaxKeptForgettingTheGoneLongestFirst: past MaxKept,
// a new client makes the registry forget the client gone longest; with
// every one connected, the one idle longest, never the new one.
func TestTrimKeepsAtMostMaxKeptForgettingTheGoneLongestFirst(t *testing.T) {
	r := New(1, always)
	for i := range MaxKept {
		// s-0 idle longest, s-1 next, …
		r.Record("local", call(fmt.Sprintf("s-%d", i), "recall", "1"), t0.Add(time.Duration(i)*time.Second), false, "")
	}
	// Three gone: s-5 longest ago, then s-7, then s-3.
	r.Disconnect("local", "s-3", t0.Add(3*time.Hour))
	r.Disconnect("local", "s-5", t0.Add(1*time.Hour))
	r.Disconnect("local", "s-7", t0.Add(2*time.Hour))
	has := func(session string) bool {
		list, _ := r.List("", t0.Add(5*time.Hour))
		return slices.ContainsFunc(list, func(c Client) bool { return c.Session == session })
	}
	r.Record("local", call("new-1", "recall", "1"), t0.Add(4*time.Hour), false, "")
	if list, _ := r.List("", t0.Add(5*time.Hour)); len(list) != MaxKept {
		t.Fatalf("%d clients kept, want %d", len(list), MaxKept)
	}
	if has("s-5") || !has("s-7") || !has("s-3") || !has("new-1") {
		t.Errorf("after one more: want s-5 (gone longest) forgotten, s-7, s-3 and new-1 kept")
	}
	r.Record("local", call("new-2", "recall", "1"), t0.Add(4*time.Hour), false, "")
	if has("s-7") || !has("s-3") {
		t.Errorf("after two more: want s-7 forgotten next, s-3 kept")
	}
	r.Record("local", call("new-3", "recall", "1"), t0.Add(4*time.Hour), false, "")
	if has("s-3") || !has("s-0") {
		t.Errorf("after three more: want s-3, the last gone one, forgotten, and s-0 kept")
	}
	// Every kept client is connected now: the one idle longest goes.
	r.Record("local", call("new-4", "recall", "1"), t0.Add(4*time.Hour), false, "")
	list, _ := r.List("", t0.Add(5*time.Hour))
	if len(list) != MaxKept || has("s-0") || !has("s-1") || !has("new-4") {
		t.Errorf("with every kept client connected: %d kept, want %d, s-0 (idle longest) forgotten, s-1 and new-4 kept", len(list), MaxKept)
	}
	// However many made-up sessions arrive, the registry stays bounded.
	for i := range 3 * MaxKept {
		r.Record("mallory", call(fmt.Sprintf("m-%d", i), "recall", "1"), t0.Add(6*time.Hour), false, "")
	}
	if list, _ := r.List("", t0.Add(7*time.Hour)); len(list) != MaxKept {
		t.Errorf("after %d made-up sessions: %d clients kept, want %d", 3*MaxKept, len(list), MaxKept)
	}
}
