package history_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/engram-console/engram/core/history"
)

// TestConcurrentWriters: writers racing on one conversation all land, with
// unique, contiguous indexes, and the buffer never exceeds its size.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{history.BackendInMemory, history.BackendDurable} {
		t.Run(backend, func(t *testing.T) {
			o := rigOptions{historyBackend: backend}
			if backend == history.BackendDurable {
				o.dir = t.TempDir()
			}
			r := newRigWith(t, o)
			const writers, each, bufferSize = 8, 25, 10
			r.configure(map[string]any{"conversation": "race", "buffer_size": bufferSize})
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				got     []int
				texts   = map[int]string{}
				errList []error
			)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						s := fmt.Sprintf("writer %d says %d about budget", w, i)
						raw, err := r.try("history.write", map[string]any{"conversation": "race", "speaker": speakerOf(i), "text": s})
						mu.Lock()
						if err != nil {
							errList = append(errList, err)
						} else {
							var res struct {
								Utterance utt `json:"utterance"`
							}
							if err := json.Unmarshal(raw, &res); err != nil {
								errList = append(errList, err)
							}
							got = append(got, res.Utterance.UtteranceIndex)
							texts[res.Utterance.UtteranceIndex] = s
						}
						mu.Unlock()
						// Readers race the writers too.
						if i%5 == 0 {
							if st := r.stats("race"); st.Size > bufferSize {
								mu.Lock()
								errList = append(errList, fmt.Errorf("buffer of %d > %d", st.Size, bufferSize))
								mu.Unlock()
							}
							r.search(map[string]any{"conversation": "race", "query": "budget"})
						}
					}
				}()
			}
			wg.Wait()
			for _, err := range errList {
				t.Error(err)
			}
			slices.Sort(got)
			want := make([]int, writers*each)
			for i := range want {
				want[i] = i
			}
			if !slices.Equal(got, want) {
				t.Errorf("indexes are not 0..%d, unique: %v", writers*each-1, got)
			}
			st := r.stats("race")
			if st.Size != bufferSize || st.NextIndex != writers*each || st.EvictedCount != writers*each-bufferSize || st.Archived != writers*each-bufferSize {
				t.Errorf("stats: %+v", st)
			}
			read := r.read("race", "")
			if !slices.Equal(indexes(read), want[len(want)-bufferSize:]) {
				t.Errorf("buffer holds %v", indexes(read))
			}
			for _, u := range read {
				if texts[u.UtteranceIndex] != u.Text {
					t.Errorf("utterance %d reads %q, was written as %q", u.UtteranceIndex, u.Text, texts[u.UtteranceIndex])
				}
			}
			if s := r.summary("race", 0); len(s.Covers) != writers*each-bufferSize || s.TokenCount > 200 {
				t.Errorf("summary covers %d, %d tokens", len(s.Covers), s.TokenCount)
			}
			if hits := r.search(map[string]any{"conversation": "race", "query": "budget", "limit": 1000}); len(hits) != writers*each {
				t.Errorf("search finds %d of %d", len(hits), writers*each)
			}
		})
	}
}
