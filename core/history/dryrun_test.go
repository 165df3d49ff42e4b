package history_test

import (
	"testing"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
)

func TestADryRunWriteChecksAndStoresNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.do("history.write", map[string]any{"conversation": "c", "speaker": "user", "text": "Book the offsite."}, nil)
	before := r.do("history.stats", map[string]any{"conversation": "c"}, nil)
	var res history.WriteResult
	r.do("history.write", map[string]any{"conversation": "c", "speaker": "assistant", "text": "Booked.", "dry_run": true}, &res)
	if !res.DryRun || res.Utterance == nil || res.Utterance.UtteranceIndex != 1 || res.Utterance.TurnNumber != 1 || res.Utterance.Text != "Booked." {
		t.Fatalf("dry run = %+v (%+v); want utterance 1 of turn 1, not written", res, res.Utterance)
	}
	if after := r.do("history.stats", map[string]any{"conversation": "c"}, nil); string(after) != string(before) {
		t.Errorf("a dry run changed the conversation:\nbefore %s\nafter  %s", before, after)
	}
	var read struct{ Utterances []utt }
	r.do("history.read", map[string]any{"conversation": "c"}, &read)
	if len(read.Utterances) != 1 {
		t.Errorf("conversation holds %d utterances after a dry run; want 1", len(read.Utterances))
	}
	// A new conversation is not created by a dry run.
	r.do("history.write", map[string]any{"conversation": "new", "speaker": "user", "text": "hi", "dry_run": true}, &res)
	var stats struct{ Exists bool }
	r.do("history.stats", map[string]any{"conversation": "new"}, &stats)
	if res.Utterance.UtteranceIndex != 0 || stats.Exists {
		t.Errorf("dry run into a new conversation = %+v, exists %v; want utterance 0 and no conversation", res.Utterance, stats.Exists)
	}
	// What the write would refuse, the dry run refuses.
	r.fail("history.write", map[string]any{"conversation": "c", "speaker": "bot", "text": "x", "dry_run": true}, errs.Validation, "speaker")
	r.Fail(enginetest.Who{As: "mallory"}, "history.write", map[string]any{"conversation": "c", "speaker": "user", "text": "x", "dry_run": true}, errs.Permission)
	r.do("history.configure", map[string]any{"conversation": "c", "max_tokens": 8}, nil)
	r.fail("history.write", map[string]any{"conversation": "c", "speaker": "user", "text": "a message far longer than the eight tokens the conversation allows", "dry_run": true}, errs.Budget, "max_tokens")
	// A turn commits its updates: a dry run there is refused.
	var started struct {
		Context struct {
			TurnID string `json:"turn_id"`
		} `json:"context"`
	}
	r.do("turn.start", map[string]any{"input": "x"}, &started)
	_, err := r.tryIn(started.Context.TurnID, "turn.end", map[string]any{"updates": map[string]any{"history": []map[string]any{{"speaker": "user", "text": "x", "dry_run": true}}}})
	if errs.KindOf(err) != errs.Validation {
		t.Errorf("turn.end with a dry-run update: %v; want a ValidationError", err)
	}
}
