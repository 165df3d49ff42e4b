package history_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/storage"
)

// historyKeys are the history's keys in the engine's store and, for a
// conversation in memory, in that backend's: records and postings.
func (r *rig) historyKeys() []string {
	r.t.Helper()
	var out []string
	for _, st := range []*storage.Store{r.e.Env().Store, history.InMemoryStore(r.h)} {
		if st == nil {
			continue
		}
		err := st.View(func(tx *storage.Tx) error {
			for _, p := range [][]byte{[]byte(storage.PrefixHistory), storage.PrefixKey(storage.PrefixIndex, "history")} {
				if err := tx.Keys(storage.Prefix(p), func(k []byte) error {
					out = append(out, string(k))
					return nil
				}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			r.t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

func TestDropDeletesAConversationAndEverythingInItAndNothingElse(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"durable", "in-memory"} {
		t.Run(backend, func(t *testing.T) {
			r := newRigWith(t, rigOptions{dir: t.TempDir()})
			// Neighbours: one whose name starts with the dropped one's.
			r.do("history.write", `{"conversation": "trip2", "speaker": "user", "text": "Trip two stays."}`, nil)
			r.do("history.write", `{"speaker": "user", "text": "The default stays."}`, nil)
			before := r.historyKeys()

			r.do("history.configure", fmt.Sprintf(`{"conversation": "trip", "buffer_size": 2, "backend": %q}`, backend), nil)
			for i := range 5 {
				r.do("history.write", fmt.Sprintf(`{"conversation": "trip", "speaker": "user", "text": "Lisbon trip note %d."}`, i), nil)
			}
			var res history.DropResult
			r.do("history.drop", `{"conversation": "trip"}`, &res)
			if res.Records == 0 {
				t.Errorf("history.drop = %+v, want the records it deleted", res)
			}
			if after := r.historyKeys(); !slices.Equal(after, before) {
				t.Errorf("keys left or lost by the drop:\nbefore %s\nafter  %s", strings.Join(before, "\n       "), strings.Join(after, "\n       "))
			}
			var list history.ListResult
			r.do("history.list", `{}`, &list)
			for _, c := range list.Conversations {
				if c.Conversation == "trip" {
					t.Errorf("history.list still lists trip: %+v", list)
				}
			}
			// The name is free: a new trip starts at 0, with nothing of the old.
			var w history.WriteResult
			r.do("history.write", `{"conversation": "trip", "speaker": "user", "text": "A new trip."}`, &w)
			if w.Utterance.UtteranceIndex != 0 {
				t.Errorf("the new trip's first utterance is #%d, want #0", w.Utterance.UtteranceIndex)
			}
			var found history.SearchResult
			r.do("history.search", `{"conversation": "trip", "query": "Lisbon"}`, &found)
			if len(found.Results) != 0 {
				t.Errorf("search finds the dropped utterances: %+v", found.Results)
			}
		})
	}
}

func TestDroppingAnUnknownConversationSaysSo(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fail("history.drop", `{"conversation": "nope"}`, errs.NotFound, `no conversation "nope"`)
}
