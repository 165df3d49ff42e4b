package history_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/engram-console/engram/storage"
)

// TestDropLeavesNoVectorWhileTheWorkerEmbeds: conversations written and
// dropped at once, while the embedding worker stores their vectors, leave
// no vector behind. (review 8, H1: the drop listed its keys in one
// transaction and deleted them in a later one; a vector the worker stored
// in between stayed, and a new conversation of the same name returned the
// dropped text for its searches.) The model's small, varying delay lets
// the worker's commit fall anywhere around the drop.
func TestDropLeavesNoVectorWhileTheWorkerEmbeds(t *testing.T) {
	var n atomic.Int64
	m := &llmtest.Scripted{Model: "m", Func: func(llm.Request) llmtest.Answer { return llmtest.Text("ok") },
		EmbedFunc: func(req llm.EmbedRequest) ([][]float32, error) {
			time.Sleep(time.Duration(n.Add(1)%7) * 150 * time.Microsecond)
			out := make([][]float32, len(req.Texts))
			for i := range out {
				out[i] = []float32{1, 2, 3}
			}
			return out, nil
		}}
	r := newRigWith(t, rigOptions{dir: t.TempDir(), llm: m})
	for i := 0; i < 300; i++ {
		c := "c" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		r.Do(enginetest.Who{}, "history.write", map[string]any{"conversation": c, "speaker": "user", "text": "secret plan number one"}, nil)
		r.Do(enginetest.Who{}, "history.drop", map[string]any{"conversation": c}, nil)
	}
	r.h.Settle()
	var left []string
	err := r.e.Env().Store.View(func(tx *storage.Tx) error {
		for _, kind := range []string{"vec", "embq"} {
			err := tx.Keys(storage.Prefix(storage.PrefixKey(storage.PrefixHistory, kind)), func(k []byte) error {
				left = append(left, string(k))
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("%d keys of dropped conversations left, first %q", len(left), left[0])
	}
}
