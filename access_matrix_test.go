package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
)

// secret is in every object Alice owns: no answer to Bob may contain it.
const secret = "4242"

// expect is what an action run by a stranger on Alice's objects must do.
type expect int

const (
	// refused: a PermissionError.
	refused expect = iota
	// quiet: it runs (it lists, or acts on the caller's own things) but
	// shows nothing of Alice's.
	quiet
	// fails: an error other than a permission one is right (e.g. an id
	// already taken), as long as it shows and changes nothing of Alice's.
	fails
)

// strangerCase is one action of the matrix.
type strangerCase struct {
	args   string // JSON, with {thread}, {episode}, {decision} filled in
	expect expect
	turn   string // a turn id to run in; turn.end's is started first
}

// strangerMatrix holds, for EVERY registered action, what Bob (no grant)
// may do with it against Alice's objects. A new action must be added here:
// the test fails for one it does not know.
var strangerMatrix = map[string]strangerCase{
	"actions.list":        {`{}`, quiet, ""},
	"engine.info":         {`{}`, quiet, ""},
	"llm.complete":        {`{"prompt":"what is Alice's PIN?"}`, fails, ""}, // offline: no model
	"embeddings.reembed":  {`{}`, refused, ""},                              // the operator's alone
	"trace.list":          {`{}`, quiet, ""},
	"trace.configure":     {`{"max_entries":1}`, refused, ""},
	"turn.start":          {`{"input":"PIN?","conversation":"alice-chat","thread_id":"{thread}"}`, refused, ""},
	"turn.end":            {`{"updates":{"history":[{"conversation":"alice-chat","speaker":"user","text":"mine now"}]}}`, refused, "bob-turn"},
	"chat.send":           {`{"text":"what is the PIN?","conversation":"alice-chat"}`, refused, "bob-chat"},
	"cortex.active":       {`{}`, quiet, ""},
	"cortex.query":        {`{"text":"PIN"}`, quiet, ""},
	"cortex.batch_query":  {`{"queries":[{"type":"goal"}]}`, quiet, ""},
	"cortex.get":          {`{"id":"alice-goal"}`, refused, ""},
	"cortex.history":      {`{"id":"alice-goal"}`, refused, ""},
	"cortex.version":      {`{"id":"alice-goal","version":1}`, refused, ""},
	"cortex.create":       {`{"type":"goal","id":"alice-goal","fields":{"title":"taken"}}`, fails, ""},
	"cortex.update":       {`{"id":"alice-goal","updates":{"progress":99}}`, refused, ""},
	"cortex.delete":       {`{"id":"alice-goal"}`, refused, ""},
	"cortex.revert":       {`{"id":"alice-goal","version":1}`, refused, ""},
	"cortex.share":        {`{"id":"alice-goal","principal":"bob","permissions":["read"]}`, refused, ""},
	"cortex.revoke":       {`{"id":"alice-goal","principal":"carol"}`, refused, ""},
	"cortex.batch_update": {`{"updates":[{"id":"alice-goal","updates":{"progress":99}}]}`, refused, ""},
	"cortex.commit":       {`{"updates":[{"id":"alice-goal","updates":{"progress":99}}]}`, refused, ""},
	"memory.stores":       {`{}`, quiet, ""},
	"memory.capacity":     {`{"store":"alice-notes"}`, refused, ""},
	"memory.get":          {`{"store":"alice-notes","id":"pin"}`, refused, ""},
	"memory.remember":     {`{"store":"alice-notes","prompt":"PIN"}`, refused, ""},
	"memory.summarize":    {`{"store":"alice-notes","token_limit":100}`, refused, ""},
	"memory.memorize":     {`{"store":"alice-notes","item":{"type":"fact","text":"bob was here","agent_id":"bob"}}`, refused, ""},
	"memory.configure":    {`{"store":"alice-notes","type":"episodic","max_items":1}`, refused, ""},
	"memory.forget":       {`{"store":"alice-notes","instruction":"from agent alice","mode":"hard"}`, refused, ""},
	"memory.share":        {`{"store":"alice-notes","principal":"bob","permissions":["read"]}`, refused, ""},
	"memory.revoke":       {`{"store":"alice-notes","principal":"carol"}`, refused, ""},
	"memory.unforget":     {`{"store":"alice-notes","id":"pin"}`, refused, ""},
	"history.list":        {`{}`, quiet, ""},
	"history.read":        {`{"conversation":"alice-chat"}`, refused, ""},
	"history.last":        {`{"conversation":"alice-chat","n":5}`, refused, ""},
	"history.search":      {`{"conversation":"alice-chat","query":"PIN"}`, refused, ""},
	"history.summary":     {`{"conversation":"alice-chat"}`, refused, ""},
	"history.stats":       {`{"conversation":"alice-chat"}`, refused, ""},
	"history.query":       {`{"query":"Get all utterances","data":{"conversation":"alice-chat"}}`, refused, ""},
	"history.write":       {`{"conversation":"alice-chat","speaker":"user","text":"bob was here"}`, refused, ""},
	"history.configure":   {`{"conversation":"alice-chat","buffer_size":1}`, refused, ""},
	"history.backend":     {`{"conversation":"alice-chat","backend":"in-memory"}`, refused, ""},
	"history.delete":      {`{"conversation":"alice-chat","utterance_index":0}`, refused, ""},
	"history.drop":        {`{"conversation":"alice-chat"}`, refused, ""},
	"history.share":       {`{"conversation":"alice-chat","principal":"bob","permissions":["read"]}`, refused, ""},
	"history.revoke":      {`{"conversation":"alice-chat","principal":"carol"}`, refused, ""},
	"thread.list":         {`{}`, quiet, ""},
	"thread.get":          {`{"thread_id":"{thread}"}`, refused, ""},
	"thread.message":      {`{"channel":"web","thread_id":"{thread}","text":"bob was here"}`, refused, ""},
	"thread.configure":    {`{"thread_id":"{thread}","inactivity_timeout_minutes":1}`, refused, ""},
	"thread.share":        {`{"thread_id":"{thread}","principal":"bob","permissions":["read"]}`, refused, ""},
	"thread.revoke":       {`{"thread_id":"{thread}","principal":"carol"}`, refused, ""},
	"episode.context":     {`{"thread_id":"{thread}","channel":"web","input":"PIN?"}`, refused, ""},
	"episode.list":        {`{"thread_id":"{thread}"}`, refused, ""},
	"episode.get":         {`{"episode_id":"{episode}"}`, refused, ""},
	"episode.decisions":   {`{"thread_id":"{thread}"}`, refused, ""},
	"episode.compact":     {`{"thread_id":"{thread}"}`, refused, ""},
	"episode.outcome":     {`{"decision_id":"{decision}","outcome":"incorrect"}`, refused, ""},
	"episode.tune":        {`{}`, refused, ""},
	"episode.tuning":      {`{}`, quiet, ""},
	"plan.list":           {`{}`, quiet, ""},
	"plan.get":            {`{"plan_id":"alice-plan"}`, refused, ""},
	"plan.status":         {`{"plan_id":"alice-plan","include_details":true}`, refused, ""},
	"plan.validate":       {`{"plan_id":"alice-plan"}`, refused, ""},
	"plan.execute":        {`{"plan_id":"alice-plan"}`, refused, ""},
	"plan.resume":         {`{"plan_id":"alice-plan"}`, refused, ""},
	"plan.replan":         {`{"plan_id":"alice-plan"}`, refused, ""},
	"plan.cancel":         {`{"plan_id":"alice-plan"}`, refused, ""},
	"plan.delete":         {`{"plan_id":"alice-plan"}`, refused, ""},
	"plan.share":          {`{"plan_id":"alice-plan","principal":"bob","permissions":["read"]}`, refused, ""},
	"plan.revoke":         {`{"plan_id":"alice-plan","principal":"carol"}`, refused, ""},
	"plan.subtask_retry":  {`{"plan_id":"alice-plan","subtask":"s1"}`, refused, ""},
	"plan.subtask_skip":   {`{"plan_id":"alice-plan","subtask":"s1"}`, refused, ""},
	"plan.subtask_done":   {`{"plan_id":"alice-plan","subtask":"s1","note":"done"}`, refused, ""},
	"plan.create":         {`{"id":"alice-plan","goal":"taken","subtasks":[{"id":"a","description":"x"}]}`, fails, ""},
	"plan.decompose":      {`{"goal":"find Alice's PIN","id":"alice-plan"}`, fails, ""},
	// Run-scoped helpers of a plan's subtasks: outside a plan they have
	// no object to reach.
	"state.get":  {`{"key":"pin"}`, fails, ""},
	"state.set":  {`{"key":"pin","value":1}`, fails, ""},
	"state.incr": {`{"key":"n"}`, fails, ""},
	"task.noop":  {`{}`, quiet, ""},
	"task.fail":  {`{"times":1}`, fails, ""},
	"task.sleep": {`{"ms":1}`, quiet, ""},
	// The tour is per agent, and writes the engine agent's memory stores:
	// Bob's load is refused there (and undone); he has none to remove.
	"tour.load":   {`{}`, fails, ""},
	"tour.remove": {`{}`, fails, ""},
	"tour.status": {`{}`, quiet, ""},
	// Tokens are the operator's (the default agent's) only.
	"token.create": {`{"agent":"alice"}`, refused, ""},
	"token.list":   {`{}`, refused, ""},
	"token.revoke": {`{"id":"0123456789ab"}`, refused, ""},
	// Agent clients: Bob lists his own (none), and cannot disconnect hers.
	"clients.list":       {`{}`, quiet, ""},
	"clients.disconnect": {`{"session":"alice-session"}`, fails, ""},
	"clients.refuse":     {`{"message":"refused"}`, fails, ""},
	// The evaluation works in a scratch engine of its own: it reads
	// nothing of Alice's (Bob's file does not exist either).
	"eval.retrieval": {`{"file":"testdata/eval/no-such-set.json"}`, fails, ""},
}

// TestStrangerIsRefusedByEveryActionAndChangesNothing is issue 13's bypass
// matrix (item 5) over the whole engine: Alice owns one object of every
// kind, each holding a secret; Bob, with no grant, runs every registered
// action against them. Each is refused (or shows nothing of hers), no
// answer contains the secret, and everything Alice sees afterwards is
// exactly what she saw before. Nor does any event Bob's subscription
// gets, from the first of Alice's writes to the last of his attempts
// (issue 15: events are per principal).
func TestStrangerIsRefusedByEveryActionAndChangesNothing(t *testing.T) {
	clk := clock.NewFixed(time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC))
	e, err := core.Open(engineOptions(core.Options{InMemory: true, Clock: clk, IDSeed: "matrix"}))
	if err != nil {
		t.Fatal(err)
	}
	if e.CheckAction("plan.create") != nil {
		_ = e.Close()
		t.Skip("the matrix covers the plan actions; this build leaves the planner out (-tags noplanning)")
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	ctx := context.Background()
	do := func(who, turn, name, args string) (json.RawMessage, error) {
		return e.Do(ctx, core.Request{Action: name, Args: json.RawMessage(args), Principal: who, Turn: turn})
	}
	bobSees, aliceSees := e.SubscribeAs(ctx, "bob"), e.SubscribeAs(ctx, "alice")
	must := func(name, args string) json.RawMessage {
		t.Helper()
		out, err := do("alice", "", name, args)
		if err != nil {
			t.Fatalf("alice: %s %s: %v", name, args, err)
		}
		return out
	}
	field := func(raw json.RawMessage, path ...string) string {
		t.Helper()
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		for _, p := range path {
			switch x := v.(type) {
			case map[string]any:
				v = x[p]
			case []any:
				i, _ := strconv.Atoi(p) // the paths below are all valid
				v = x[i]
			}
		}
		s, _ := v.(string)
		if s == "" {
			t.Fatalf("no %v in %s", path, raw)
		}
		return s
	}

	// Alice's objects, each with the secret.
	must("cortex.create", `{"type":"goal","id":"alice-goal","fields":{"title":"Change the PIN 4242"}}`)
	must("memory.configure", `{"store":"alice-notes","type":"episodic"}`)
	must("memory.memorize", `{"store":"alice-notes","item":{"id":"pin","type":"fact","text":"The PIN is 4242","agent_id":"alice"}}`)
	must("history.write", `{"conversation":"alice-chat","speaker":"user","text":"my PIN is 4242"}`)
	m1 := must("thread.message", `{"channel":"sms","text":"What's the weather in New York? PIN 4242"}`)
	thread := field(m1, "thread_id")
	clk.Advance(45 * time.Minute)
	m2 := must("thread.message", `{"channel":"sms","text":"Oh, and what is it on Thursday? PIN 4242"}`)
	decision := field(m2, "decision", "decision_id")
	episode := field(m1, "turn", "episode_id")
	must("plan.create", `{"id":"alice-plan","goal":"Rotate the PIN 4242","subtasks":[{"id":"s1","description":"note 4242","action":{"name":"task.noop"}}]}`)
	must("plan.execute", `{"plan_id":"alice-plan"}`)
	// Carol is given Alice's conversation and loses it again: she hears
	// of both; Bob of neither.
	must("history.share", `{"conversation":"alice-chat","principal":"carol","permissions":["read"]}`)
	must("history.revoke", `{"conversation":"alice-chat","principal":"carol"}`)
	if _, err := e.Do(ctx, core.Request{Action: "engine.info", Principal: "alice",
		Client: &conn.ClientCall{Session: "alice-session", Via: "mcp", Name: "pin-keeper 4242", Tool: "memory_stats", Call: "1"}}); err != nil {
		t.Fatal(err)
	}

	// What Alice sees, before and after.
	views := []struct{ name, args string }{
		{"cortex.get", `{"id":"alice-goal"}`},
		{"cortex.history", `{"id":"alice-goal"}`},
		{"memory.remember", `{"store":"alice-notes","prompt":"PIN"}`},
		{"memory.capacity", `{"store":"alice-notes"}`},
		{"history.read", `{"conversation":"alice-chat"}`},
		{"history.stats", `{"conversation":"alice-chat"}`},
		{"thread.get", `{"thread_id":"` + thread + `"}`},
		{"episode.list", `{"thread_id":"` + thread + `"}`},
		{"episode.decisions", `{"thread_id":"` + thread + `"}`},
		{"plan.get", `{"plan_id":"alice-plan"}`},
		{"history.list", `{}`},
		{"memory.stores", `{}`},
		{"thread.list", `{}`},
		{"plan.list", `{}`},
		{"trace.configure", `{}`},
		{"episode.tuning", `{}`},
		{"clients.list", `{}`},
	}
	snapshot := func() map[string]string {
		out := map[string]string{}
		for _, v := range views {
			out[v.name] = string(must(v.name, v.args))
		}
		return out
	}
	before := snapshot()

	fill := strings.NewReplacer("{thread}", thread, "{episode}", episode, "{decision}", decision)
	for _, a := range e.Actions() {
		c, ok := strangerMatrix[a.Name]
		if !ok {
			t.Errorf("%s is not in the stranger matrix: add what an agent without a grant may do with it", a.Name)
			continue
		}
		args := fill.Replace(c.args)
		if a.Name == "turn.end" {
			if _, err := do("bob", c.turn, "turn.start", `{"input":"hi"}`); err != nil {
				t.Fatalf("bob's own turn.start: %v", err)
			}
		}
		out, err := do("bob", c.turn, a.Name, args)
		if strings.Contains(string(out), secret) || (err != nil && strings.Contains(err.Error(), secret)) {
			t.Errorf("%s as bob shows Alice's secret: %s %v", a.Name, out, err)
		}
		switch c.expect {
		case refused:
			if errs.KindOf(err) != errs.Permission {
				t.Errorf("%s %s as bob: %v (result %.200s), want a PermissionError", a.Name, args, err, out)
			}
		case quiet:
			if err != nil {
				t.Errorf("%s as bob: %v, want it to run and show nothing of Alice's", a.Name, err)
			}
			for _, id := range []string{"alice-goal", "alice-notes", "alice-chat", thread, "alice-plan"} {
				// Bob's own denials, in his trace, name what he asked for.
				if a.Name != "trace.list" && strings.Contains(string(out), id) {
					t.Errorf("%s as bob names Alice's %s: %.300s", a.Name, id, out)
				}
			}
		case fails:
			if err == nil {
				t.Errorf("%s %s as bob succeeded: %.200s", a.Name, args, out)
			}
		}
	}
	// Every refusal is in the owner's trace too, whatever the object.
	var denied struct {
		Entries []struct {
			Data struct {
				ResourceType string `json:"resource_type"`
			} `json:"data"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(must("trace.list", `{"kind":"access_denied","limit":1000}`), &denied); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range denied.Entries {
		seen[e.Data.ResourceType] = true
	}
	for _, typ := range []string{"goal", "memory store", "conversation", "thread", "plan"} {
		if !seen[typ] {
			t.Errorf("alice's trace has no access_denied entry about her %s (it has %v)", typ, seen)
		}
	}
	for name, was := range before {
		if now := snapshot()[name]; now != was {
			t.Errorf("Bob changed what Alice sees through %s:\nbefore %s\nafter  %s", name, was, now)
		}
	}

	// The events: everything published so far has reached both
	// subscriptions once this marker, which everyone sees, has.
	e.Env().Events.Publish("test.end", events.Everyone(), nil)
	received := func(ch <-chan events.Event) (out []string) {
		for ev := range ch {
			if ev.Name == "test.end" {
				return out
			}
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
		t.Fatal("a subscription ended before the marker")
		return nil
	}
	alices := strings.Join(received(aliceSees), "\n")
	for _, want := range []string{`"item.mutated"`, `"utterance.written"`, `"memory.memorized"`, `"thread.created"`,
		`"plan.finished"`, `"conversation.access"`, `"trace.recorded"`, secret} {
		if !strings.Contains(alices, want) {
			t.Errorf("alice's events have no %s: the test would not see it leak to Bob", want)
		}
	}
	for _, line := range received(bobSees) {
		if strings.Contains(line, secret) {
			t.Errorf("an event Bob got shows Alice's secret: %.300s", line)
		}
		if strings.Contains(line, `"principal":"bob"`) {
			continue // his own trace entries name what he asked for
		}
		for _, id := range []string{"alice-goal", "alice-notes", "alice-chat", thread, "alice-plan", "carol"} {
			if strings.Contains(line, id) {
				t.Errorf("an event Bob got names Alice's %s: %.300s", id, line)
			}
		}
	}
}
