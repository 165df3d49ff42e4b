package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// Channels a turn may arrive on (seed 003): explicit ones select a thread,
// implicit ones continue the most recent.
var Channels = []string{"web", "app", "sms", "whatsapp", "voice"}

// TurnRecord is what the store keeps of a turn.
type TurnRecord struct {
	TurnID       string     `json:"turn_id"`
	Principal    string     `json:"principal"`
	Input        string     `json:"input,omitempty"`
	Channel      string     `json:"channel,omitempty"`
	ThreadID     string     `json:"thread_id,omitempty"`
	Conversation string     `json:"conversation"`
	StartedAt    time.Time  `json:"started_at"`
	EndedAt      *time.Time `json:"ended_at,omitempty"`
}

// WorkingContext is the working memory assembled for a turn: one section per
// context provider that had something to contribute.
type WorkingContext struct {
	TurnID       string    `json:"turn_id"`
	Principal    string    `json:"principal"`
	StartedAt    time.Time `json:"started_at"`
	Input        string    `json:"input"`
	Channel      string    `json:"channel,omitempty"`
	ThreadID     string    `json:"thread_id,omitempty"`
	Conversation string    `json:"conversation"`
	Providers    []string  `json:"providers"`
	// Sections are each provider's part, as JSON: a provider's own type
	// (cortex.ContextSection, history.ContextData, episodic.Context,
	// memory's section) that Section decodes.
	Sections map[string]json.RawMessage `json:"sections"`
}

// Section decodes the named provider's section into v, reporting whether
// there was one.
func (wc WorkingContext) Section(name string, v any) (bool, error) {
	raw, ok := wc.Sections[name]
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, errs.New(errs.Internal, "the %s section of turn %s does not decode as %T: %v", name, wc.TurnID, v, err)
	}
	return true, nil
}

// encodeSection is a provider's section or commit result as JSON, encoded
// the way results are (no HTML escaping), so the bytes a face prints are
// the same as when it was embedded as a value.
func encodeSection(provider string, v any) (json.RawMessage, error) {
	b, err := action.MarshalJSON(v)
	if err != nil {
		return nil, fmt.Errorf("context provider %s: encoding its part: %w", provider, err)
	}
	return b, nil
}

// TurnStartArgs is turn.start's arguments.
type TurnStartArgs struct {
	Input        string `json:"input,omitempty" help:"what the user said or asked this turn"`
	Channel      string `json:"channel,omitempty" help:"web, app, sms, whatsapp or voice"`
	ThreadID     string `json:"thread_id,omitempty" help:"the conversation thread, for explicit channels"`
	Conversation string `json:"conversation,omitempty" help:"the history buffer (default \"default\")"`
}

// TurnStartResult is turn.start's result: the turn's working memory.
type TurnStartResult struct {
	Context WorkingContext `json:"context"`
}

func turnKey(id string) []byte { return storage.Key(storage.PrefixTurn, id) }

func (e *Engine) startTurn(ctx context.Context, call action.Call, args TurnStartArgs) (TurnStartResult, error) {
	if args.Channel != "" && !slices.Contains(Channels, args.Channel) {
		return TurnStartResult{}, kit.Validation("channel", "unknown channel %q; use one of %s", args.Channel, strings.Join(Channels, ", "))
	}
	if args.Conversation == "" {
		args.Conversation = "default"
	}
	turnID := call.Turn
	if turnID == "" {
		turnID = e.env.IDs.New()
	}
	now := call.Clock.Now()
	start := kit.TurnStart{
		TurnID: turnID, Principal: call.Principal, Input: args.Input, Channel: args.Channel,
		ThreadID: args.ThreadID, Conversation: args.Conversation, At: now,
	}
	wc := WorkingContext{
		TurnID: turnID, Principal: call.Principal, StartedAt: now, Input: args.Input, Channel: args.Channel,
		ThreadID: args.ThreadID, Conversation: args.Conversation, Providers: []string{}, Sections: map[string]json.RawMessage{},
	}
	// Refuse a duplicate before asking every provider for its section; the
	// check is repeated in the transaction below, which is what decides.
	if err := e.env.Store.View(func(tx *storage.Tx) error { return refuseStartedTurn(tx, call.Principal, turnID) }); err != nil {
		return TurnStartResult{}, err
	}
	var notes []kit.Note
	for _, p := range e.env.Providers() {
		section, err := p.Context(ctx, start)
		if err != nil {
			return TurnStartResult{}, fmt.Errorf("context provider %s: %w", p.Name(), err)
		}
		wc.Providers = append(wc.Providers, p.Name())
		if section.Data != nil {
			if wc.Sections[p.Name()], err = encodeSection(p.Name(), section.Data); err != nil {
				return TurnStartResult{}, err
			}
		}
		notes = append(notes, section.Notes...)
	}
	rec := TurnRecord{
		TurnID: turnID, Principal: call.Principal, Input: args.Input, Channel: args.Channel,
		ThreadID: args.ThreadID, Conversation: args.Conversation, StartedAt: now,
	}
	// Encode the result before recording the turn: a working memory that
	// cannot be encoded (too deep for the JSON decoder) would otherwise fail
	// the step after the turn was started, leaving it open.
	if _, err := action.MarshalJSON(TurnStartResult{Context: wc}); err != nil {
		return TurnStartResult{}, errs.New(errs.Internal, "turn.start: the turn's working memory cannot be encoded (%v); no turn was started", err)
	}
	call.Turn = turnID
	err := e.env.Update(ctx, func(tx *kit.Txn) error {
		if err := refuseStartedTurn(tx.Tx, call.Principal, turnID); err != nil {
			return err
		}
		if err := tx.SetJSON(turnKey(turnID), rec); err != nil {
			return err
		}
		for _, n := range notes {
			if _, err := tx.Trace(call, n.Kind, n.Message, n.Data); err != nil {
				return err
			}
		}
		_, err := tx.Trace(call, "turn.start", fmt.Sprintf("turn started: %d context section(s) from %d provider(s)", len(wc.Sections), len(wc.Providers)),
			map[string]any{"input": args.Input, "channel": args.Channel, "sections": sortedKeys(wc.Sections)})
		return err
	})
	if err != nil {
		return TurnStartResult{}, err
	}
	return TurnStartResult{Context: wc}, nil
}

// refuseStartedTurn is a ConflictError when turn id was started before.
func refuseStartedTurn(tx *storage.Tx, principal, id string) error {
	var existing TurnRecord
	switch err := tx.GetJSON(turnKey(id), &existing); {
	case err == nil && existing.Principal != principal:
		// Another agent's turn: its input and time are not the caller's
		// to see, only that the id is taken.
		return errs.New(errs.Conflict, "turn id %q is taken; give the new turn its own id", id)
	case err == nil:
		return errs.New(errs.Conflict, "turn %q already started at %s; give the new turn its own id", id, existing.StartedAt.Format(time.RFC3339Nano)).
			With("current", existing)
	case errors.Is(err, storage.ErrNotFound):
		return nil
	default:
		return err
	}
}

// TurnEndArgs is turn.end's arguments.
type TurnEndArgs struct {
	Updates map[string]json.RawMessage `json:"updates,omitempty" help:"per context provider, what the turn commits: {\"provider\": ...}"`
}

// TurnEndResult is turn.end's result.
type TurnEndResult struct {
	TurnID    string    `json:"turn_id"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	// Committed is, per context provider that committed something, what it
	// committed (e.g. the history's utterances written), as JSON of the
	// provider's own type.
	Committed map[string]json.RawMessage `json:"committed"`
}

func (e *Engine) endTurn(ctx context.Context, call action.Call, args TurnEndArgs) (TurnEndResult, error) {
	if call.Turn == "" {
		return TurnEndResult{}, kit.Validation("turn", "turn.end needs the turn it ends: give the step a \"turn\" (the id turn.start returned)")
	}
	providers := e.env.Providers()
	names := make([]string, len(providers))
	for i, p := range providers {
		names[i] = p.Name()
	}
	for name := range args.Updates {
		if !slices.Contains(names, name) {
			known := "no context providers are registered yet"
			if len(names) > 0 {
				known = "the providers are " + strings.Join(names, ", ")
			}
			return TurnEndResult{}, kit.Validation("updates."+name, "no context provider named %q; %s", name, known)
		}
	}
	now := call.Clock.Now()
	var res TurnEndResult
	failed := "" // the provider whose commit failed
	err := e.env.Update(ctx, func(tx *kit.Txn) error {
		failed = ""
		var rec TurnRecord
		switch err := tx.GetJSON(turnKey(call.Turn), &rec); {
		case errors.Is(err, storage.ErrNotFound):
			return errs.New(errs.NotFound, "turn %q was never started; start it with turn.start", call.Turn).With("field", "turn")
		case err != nil:
			return err
		}
		// Ownership first: another agent's turn shows nothing of itself.
		if rec.Principal != call.Principal {
			return errs.New(errs.Permission, "turn %q belongs to another agent; only it can end the turn", call.Turn).
				With("principal", call.Principal)
		}
		if rec.EndedAt != nil {
			return errs.New(errs.Conflict, "turn %q already ended at %s", call.Turn, rec.EndedAt.Format(time.RFC3339Nano)).With("current", rec)
		}
		res = TurnEndResult{TurnID: rec.TurnID, StartedAt: rec.StartedAt, EndedAt: now, Committed: map[string]json.RawMessage{}}
		for _, p := range providers {
			out, err := p.Commit(ctx, tx, kit.TurnEnd{TurnID: call.Turn, Principal: call.Principal, Updates: args.Updates[p.Name()], At: now})
			if err != nil {
				failed = p.Name()
				return fmt.Errorf("context provider %s: %w", p.Name(), err)
			}
			if out != nil {
				if res.Committed[p.Name()], err = encodeSection(p.Name(), out); err != nil {
					return err
				}
			}
		}
		rec.EndedAt = &now
		if err := tx.SetJSON(turnKey(call.Turn), rec); err != nil {
			return err
		}
		_, err := tx.Trace(call, "turn.end", fmt.Sprintf("turn ended: %d provider(s) committed", len(res.Committed)),
			map[string]any{"committed": sortedKeys(res.Committed)})
		return err
	})
	if err != nil {
		// A provider's refusal rolled back with the turn's transaction:
		// its access_denied entry is written now (nothing else is).
		_ = e.env.TraceFailure(ctx, call, err) // it returns err, which is returned below
	}
	if err != nil && failed != "" {
		for _, p := range providers {
			if r, ok := p.(kit.FailureReporter); ok && p.Name() == failed {
				r.CommitFailed(ctx, kit.TurnEnd{TurnID: call.Turn, Principal: call.Principal, Updates: args.Updates[p.Name()], At: now}, err)
			}
		}
	}
	return res, err
}

func (e *Engine) countTurns() (map[string]int, error) {
	open, ended := 0, 0
	err := e.env.Store.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Prefix([]byte(storage.PrefixTurn)), func(_, v []byte) error {
			var rec TurnRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return err
			}
			if rec.EndedAt == nil {
				open++
			} else {
				ended++
			}
			return nil
		})
	})
	return map[string]int{"open": open, "ended": ended}, err
}

// sortedKeys lists m's keys in order; never nil, so JSON shows [] not null.
func sortedKeys[V any](m map[string]V) []string {
	return append([]string{}, slices.Sorted(maps.Keys(m))...)
}
