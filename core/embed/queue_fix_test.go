package embed

import (
	"context"
	"testing"

	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// TestLastErrorGoesWithTheFailedTexts: once the texts whose embedding
// failed are deleted, the queue's last error goes too: nothing waits that
// it could be about. (review 8 nit: it lingered in engine.info.)
func TestLastErrorGoesWithTheFailedTexts(t *testing.T) {
	m := &model{name: "m", dim: 2}
	m.set(&llm.Error{Provider: "test", Op: "embed", Transient: true, Msg: "down"})
	r := newRig(t, m)
	r.write(map[string]string{"a": "one"})
	r.settle()
	if s := r.q.Stats(); s.Failed != 1 || s.LastError == "" {
		t.Fatalf("stats after the failure: %+v", s)
	}
	err := r.st.Update(context.Background(), func(tx *storage.Tx) error {
		if err := tx.Delete(storage.Key("t/", "item", "a")); err != nil {
			return err
		}
		return tx.Delete(storage.Key("t/", "q", "a"))
	})
	if err != nil {
		t.Fatal(err)
	}
	m.set(nil)
	r.clock.Advance(FirstBackoff)
	r.q.Kick()
	r.settle()
	if s := r.q.Stats(); s.Failed != 0 || s.Pending != 0 || s.LastError != "" {
		t.Errorf("stats once the failed text is gone: %+v", s)
	}
}
