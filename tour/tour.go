// Package tour is engram's guided start: a short script of ordinary actions,
// shipped in the binary, that fills an empty engram with sample data (a
// conversation past its buffer, two linked threads, goals with versions, a
// plan with a failure, memories in both stores), and removes exactly that
// data again. The script runs through the batch runner (core/batch), as any
// script does; the tour only remembers what the script made.
package tour

import (
	"bytes"
	"context"
	_ "embed" // the script ships in the binary
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/batch"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/memory"
	"github.com/engram-console/engram/planner"
	"github.com/engram-console/engram/storage"
)

// script is the tour: a batch script (JSON Lines) with "at" on every step.
//
//go:embed tour.jsonl
var script []byte

// Tag marks the tour's goals and memories; the conversation and the plan
// are named Conversation and Plan.
const Tag = "tour"

// Conversation is the tour's conversation.
const Conversation = "tour"

// Plan is the tour's plan id.
const Plan = "tour"

// The kinds of object the tour makes.
const (
	KindConversation = "conversation" // the tour's conversation, everything in it
	KindUtterance    = "utterance"    // an utterance of the tour's conversation
	KindThread       = "thread"       // a conversation thread
	KindCortexItem   = "cortex_item"  // a goal, action or question
	KindPlan         = "plan"
	KindMemoryItem   = "memory_item" // an item of a memory store
)

// Object is one thing the tour made.
type Object struct {
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// ID is its id: a thread's, an item's, a plan's, a memory item's; an
	// utterance's index.
	ID string `json:"id"`
	// In is what holds it: the conversation of an utterance, the store of
	// a memory item.
	In string `json:"in,omitempty"`
}

// Kept is an object tour.remove leaves, and why.
type Kept struct {
	Object
	// Why it stays.
	Why string `json:"why"`
}

// Status is tour.status's result, and tour.load's.
type Status struct {
	// Loaded: the tour's sample data is present for this agent.
	Loaded bool `json:"loaded"`
	// LoadedAt is when it was loaded (the engine clock).
	LoadedAt *time.Time `json:"loaded_at,omitempty"`
	// Objects are what the tour made, in the order it made them.
	Objects []Object `json:"objects"`
	// Kept are objects a tour.remove left behind (engram cannot remove them
	// yet); they stay listed until the tour is loaded again.
	Kept []Kept `json:"kept,omitempty"`
}

// RemoveResult is tour.remove's result.
type RemoveResult struct {
	// Removed are the objects removed (or already gone).
	Removed []Object `json:"removed"`
	// Kept are the objects left, each with the reason.
	Kept []Kept `json:"kept"`
}

// LoadedEvent is the payload of EventLoaded.
type LoadedEvent struct {
	Agent   string `json:"agent"`
	Objects int    `json:"objects"`
}

// RemovedEvent is the payload of EventRemoved.
type RemovedEvent struct {
	Agent   string `json:"agent"`
	Kept    int    `json:"kept"`
	Removed int    `json:"removed"`
}

var (
	// ActionLoad is the tour.load action.
	ActionLoad = action.NewRef[action.None, Status]("tour.load")
	// ActionRemove is the tour.remove action.
	ActionRemove = action.NewRef[action.None, RemoveResult]("tour.remove")
	// ActionStatus is the tour.status action.
	ActionStatus = action.NewRef[action.None, Status]("tour.status")

	// EventLoaded fires when tour.load has loaded the sample data.
	EventLoaded = events.Define[LoadedEvent]("tour.loaded", "after tour.load made the tour's sample data")
	// EventRemoved fires when tour.remove has removed it.
	EventRemoved = events.Define[RemovedEvent]("tour.removed", "after tour.remove removed the tour's sample data")
)

// Subsystem registers the tour.* actions, for core.Options.Subsystems.
func Subsystem() func(env *kit.Env) error {
	return func(env *kit.Env) error {
		t := &tour{env: env}
		reg := env.Actions
		ActionLoad.Register(reg, action.Spec{Summary: "Load a short tour: sample data in every tab (tour.remove removes it)", Exclusive: true}, t.load)
		ActionRemove.Register(reg, action.Spec{Summary: "Remove exactly the tour's sample data"}, t.remove)
		ActionStatus.Register(reg, action.Spec{Summary: "Whether the tour is loaded, and what it made", ReadOnly: true}, t.status)
		return nil
	}
}

type tour struct {
	env *kit.Env
	// mu makes loads and removals one at a time: two loads at once would
	// both find no tour and make it twice.
	mu sync.Mutex
}

// record is what the store keeps of a loaded tour, per agent.
type record struct {
	LoadedAt time.Time `json:"loaded_at"`
	Objects  []Object  `json:"objects"`
	Kept     []Kept    `json:"kept,omitempty"`
}

func key(agent string) []byte { return storage.Key(storage.PrefixMeta, "tour", agent) }

func (t *tour) read(agent string) (rec record, found bool, err error) {
	err = t.env.Store.View(func(tx *storage.Tx) error {
		err := tx.GetJSON(key(agent), &rec)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		found = err == nil
		return err
	})
	return rec, found, err
}

func (t *tour) status(_ context.Context, call action.Call, _ action.None) (Status, error) {
	rec, found, err := t.read(call.Principal)
	if err != nil {
		return Status{}, err
	}
	return rec.status(found), nil
}

func (r record) status(loaded bool) Status {
	st := Status{Loaded: loaded && len(r.Objects) > 0, Objects: r.Objects, Kept: r.Kept}
	if st.Objects == nil {
		st.Objects = []Object{}
	}
	if st.Loaded {
		at := r.LoadedAt
		st.LoadedAt = &at
	}
	return st
}

func (t *tour) load(ctx context.Context, call action.Call, _ action.None) (Status, error) {
	// A load is short and all or nothing: a console quitting meanwhile
	// (cancelling its requests) must not leave half a tour, unrecorded.
	ctx = context.WithoutCancel(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	rec, found, err := t.read(call.Principal)
	if err != nil {
		return Status{}, err
	}
	if found && len(rec.Objects) > 0 {
		return Status{}, errs.New(errs.Conflict, "the tour is loaded already (since %s); tour.remove removes it, then tour.load loads it again",
			rec.LoadedAt.Format(time.RFC3339))
	}
	// The tour's conversation is its own: loading it into one of yours
	// would have tour.remove delete yours.
	as := action.Call{Principal: call.Principal, Turn: call.Turn}
	if st, err := run(ctx, t.env, as, history.ActionStats, history.StatsArgs{Conversation: Conversation}); err != nil {
		return Status{}, err
	} else if st.Exists {
		return Status{}, errs.New(errs.Conflict, "a conversation named %q exists already, and the tour would write into it; "+
			"history.drop deletes it if it is an old tour's, or load the tour under another --agent", Conversation)
	}
	now := t.env.Clock.Now()
	steps, err := t.steps(now)
	if err != nil {
		return Status{}, err
	}
	var out bytes.Buffer
	runner, err := batch.NewEnvRunner(t.env, &out, batch.Options{FailFast: true, Principal: call.Principal})
	if err != nil {
		return Status{}, err
	}
	summary, runErr := runner.Run(ctx, bytes.NewReader(steps), false)
	made, failure := objects(out.Bytes())
	if runErr != nil || !summary.OK() {
		// Leave nothing half made: take back what the script made so far.
		if _, kept, err := t.take(ctx, call, made); err != nil || len(kept) > 0 {
			t.env.Log.Warn("tour.load: undoing a failed load left objects", "kept", len(kept), "err", err)
		}
		if runErr != nil {
			return Status{}, runErr
		}
		return Status{}, errs.New(errs.Conflict, "the tour could not be loaded: %s; nothing of it was kept", failure)
	}
	rec = record{LoadedAt: now, Objects: made}
	err = t.env.Update(ctx, func(tx *kit.Txn) error {
		EventLoaded.Publish(tx, events.Only(call.Principal), LoadedEvent{Agent: call.Principal, Objects: len(made)})
		return tx.SetJSON(key(call.Principal), rec)
	})
	if err != nil {
		return Status{}, err
	}
	return rec.status(true), nil
}

// steps is the script with every step's "at" moved so that the last step
// is at now (to the second): the sample data reads as just made, and the
// same clock gives the same bytes. Without the planner (-tags noplanning)
// the plan's steps are left out.
func (t *tour) steps(now time.Time) ([]byte, error) {
	var decoded []batch.Step
	var last time.Time
	for i, text := range bytes.Split(script, []byte("\n")) {
		text = bytes.TrimSpace(text)
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		st, err := batch.DecodeStep(text)
		if err != nil || st.At == nil {
			return nil, errs.New(errs.Internal, "the tour's script, line %d: %v (every step needs a valid at)", i+1, err)
		}
		if ns, _, _ := strings.Cut(st.Action, "."); t.env.Actions.IsRemoved(ns) {
			continue
		}
		decoded = append(decoded, st)
		last = *st.At
	}
	shift := now.Truncate(time.Second).Sub(last)
	var out bytes.Buffer
	for _, st := range decoded {
		at := st.At.Add(shift)
		st.At = &at
		b, err := json.Marshal(st)
		if err != nil {
			return nil, err
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

// objects reads the runner's result lines: what each passing step made,
// and the first failure, said for a person.
func objects(lines []byte) (made []Object, failure string) {
	seen := map[Object]bool{}
	add := func(o Object) {
		if o.ID != "" && !seen[o] {
			seen[o] = true
			made = append(made, o)
		}
	}
	for _, line := range bytes.Split(lines, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var res batch.Result
		if json.Unmarshal(line, &res) != nil {
			continue
		}
		if !res.OK {
			if failure == "" && res.Error != nil {
				failure = fmt.Sprintf("step %s (%s): %s", res.ID, res.Action, res.Error.Message)
			}
			continue
		}
		switch res.Action {
		case history.ActionConfigure.Name():
			var r history.Stats
			if json.Unmarshal(res.Result, &r) == nil {
				add(Object{Kind: KindConversation, ID: r.Conversation})
			}
		case history.ActionWrite.Name():
			var r history.WriteResult
			if json.Unmarshal(res.Result, &r) == nil {
				add(Object{Kind: KindUtterance, ID: fmt.Sprint(r.Utterance.UtteranceIndex), In: r.Utterance.Conversation})
			}
		case episodic.ActionThreadMessage.Name():
			var r episodic.MessageResult
			if json.Unmarshal(res.Result, &r) == nil {
				add(Object{Kind: KindThread, ID: r.ThreadID})
			}
		case cortex.ActionCreate.Name():
			var r cortex.ItemResult
			if json.Unmarshal(res.Result, &r) == nil && r.Item != nil {
				add(Object{Kind: KindCortexItem, ID: r.Item.ID})
			}
		case planner.ActionPlanCreate.Name():
			var r planner.PlanResult
			if json.Unmarshal(res.Result, &r) == nil && r.Plan != nil {
				add(Object{Kind: KindPlan, ID: r.Plan.ID})
			}
		case memory.ActionMemorize.Name():
			var r memory.MemorizeResult
			if json.Unmarshal(res.Result, &r) == nil {
				store, _, _ := strings.Cut(r.Ref, "/")
				add(Object{Kind: KindMemoryItem, ID: r.Item.ID, In: store})
			}
		}
	}
	return made, failure
}

func (t *tour) remove(ctx context.Context, call action.Call, _ action.None) (RemoveResult, error) {
	ctx = context.WithoutCancel(ctx) // as load: never half done
	t.mu.Lock()
	defer t.mu.Unlock()
	rec, found, err := t.read(call.Principal)
	if err != nil {
		return RemoveResult{}, err
	}
	if !found || len(rec.Objects) == 0 {
		return RemoveResult{}, errs.New(errs.NotFound, "no tour is loaded, so there is nothing to remove; tour.load loads it")
	}
	removed, kept, takeErr := t.take(ctx, call, rec.Objects)
	// Whatever happened, the record says what is left: the objects not yet
	// taken (on an error), and those engram cannot remove.
	left := record{LoadedAt: rec.LoadedAt, Kept: kept}
	if takeErr != nil {
		gone := map[Object]bool{}
		for _, o := range removed {
			gone[o] = true
		}
		for _, k := range kept {
			gone[k.Object] = true
		}
		for _, o := range rec.Objects {
			if !gone[o] {
				left.Objects = append(left.Objects, o)
			}
		}
	}
	err = t.env.Update(ctx, func(tx *kit.Txn) error {
		if takeErr == nil {
			EventRemoved.Publish(tx, events.Only(call.Principal), RemovedEvent{Agent: call.Principal, Removed: len(removed), Kept: len(kept)})
		}
		return tx.SetJSON(key(call.Principal), left)
	})
	if takeErr != nil {
		return RemoveResult{}, takeErr
	}
	if err != nil {
		return RemoveResult{}, err
	}
	if removed == nil {
		removed = []Object{}
	}
	if kept == nil {
		kept = []Kept{}
	}
	return RemoveResult{Removed: removed, Kept: kept}, nil
}

// take removes objs, last made first (an action before its goal), as the
// agent that made them. An object already gone counts as removed. The
// utterances of a conversation the tour made go with it.
func (t *tour) take(ctx context.Context, call action.Call, objs []Object) (removed []Object, kept []Kept, err error) {
	as := action.Call{Principal: call.Principal, Turn: call.Turn}
	dropping := map[string]bool{}
	for _, o := range objs {
		if o.Kind == KindConversation {
			dropping[o.ID] = true
		}
	}
	for i := len(objs) - 1; i >= 0; i-- {
		o := objs[i]
		var err error
		switch o.Kind {
		case KindMemoryItem:
			_, err = run(ctx, t.env, as, memory.ActionForget, memory.ForgetArgs{Store: o.In, Instruction: "item " + o.ID, Mode: "hard"})
		case KindPlan:
			_, err = run(ctx, t.env, as, planner.ActionPlanDelete, planner.PlanArgs{PlanID: o.ID})
		case KindCortexItem:
			_, err = run(ctx, t.env, as, cortex.ActionDelete, cortex.IDArgs{ID: o.ID})
		case KindConversation:
			_, err = run(ctx, t.env, as, history.ActionDrop, history.DropArgs{Conversation: o.ID})
		case KindUtterance:
			if dropping[o.In] {
				break // it goes with its conversation
			}
			var n int
			if _, scanErr := fmt.Sscan(o.ID, &n); scanErr != nil {
				return removed, kept, errs.New(errs.Internal, "the tour's record names utterance %q, not a number", o.ID)
			}
			_, err = run(ctx, t.env, as, history.ActionDelete, history.DeleteArgs{Conversation: o.In, UtteranceIndex: &n})
		case KindThread:
			kept = append(kept, Kept{Object: o, Why: "engram has no action that deletes a thread yet"})
			continue
		default:
			kept = append(kept, Kept{Object: o, Why: "unknown kind"})
			continue
		}
		if err != nil && !errors.Is(err, errs.ErrNotFound) {
			return removed, kept, err
		}
		removed = append(removed, o)
	}
	return removed, kept, nil
}

// run runs the action ref names through the engine, as call's principal.
func run[A, R any](ctx context.Context, env *kit.Env, call action.Call, ref action.Ref[A, R], args A) (R, error) {
	var out R
	raw, err := action.MarshalJSON(args)
	if err != nil {
		return out, err
	}
	res, err := env.Run(ctx, call, ref.Name(), raw)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(res, &out); err != nil {
		return out, errs.New(errs.Internal, "%s: its result is not a %T: %v", ref.Name(), out, err)
	}
	return out, nil
}
