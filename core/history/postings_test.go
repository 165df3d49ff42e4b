package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
)

// propertyWords are few, so that terms repeat across utterances and within
// one; stop words among them make utterances of none.
var propertyWords = []string{"lisbon", "flight", "flights", "budget", "review", "maria", "order", "ordered", "invoice",
	"refund", "charge", "redis", "memory", "rollback", "launch", "price", "the", "is", "what", "it", "a", "of", "42", "x9"}

func propertyText(rng *rand.Rand) string {
	if rng.IntN(40) == 0 {
		// A term more than 255 times in one utterance.
		return strings.Repeat("budget ", 256+rng.IntN(50)) + "review"
	}
	n := 1 + rng.IntN(12)
	words := make([]string, n)
	for i := range words {
		words[i] = propertyWords[rng.IntN(len(propertyWords))]
	}
	if rng.IntN(3) == 0 {
		words[0] = strings.ToUpper(words[0][:1]) + words[0][1:]
	}
	return strings.Join(words, " ")
}

// TestSearchFromMemoryEqualsScanningTheStore: after random writes, deletes,
// evictions, drops and moves between backends in several conversations,
// every search answers from the postings in memory exactly what scoring
// the posting keys in the store answers (the same hits, scores and order),
// and the postings in memory were kept current by the changes, not read
// again for each.
func TestSearchFromMemoryEqualsScanningTheStore(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := newRigWith(t, rigOptions{dir: t.TempDir()})
			rng := rand.New(rand.NewPCG(seed, 99))
			ctx := context.Background()
			convs := []string{"default", "default2", "other"}
			next := map[string]int{}
			checked := 0
			for step := range 400 {
				c := convs[rng.IntN(len(convs))]
				switch op := rng.IntN(100); {
				case op < 60:
					if _, err := r.h.Write(ctx, r.call(), history.WriteRequest{Conversation: c, Speaker: []string{"user", "assistant", "system"}[rng.IntN(3)], Text: propertyText(rng)}); err != nil {
						t.Fatal(err)
					}
					next[c]++
				case op < 75 && next[c] > 0:
					_, err := r.h.Delete(ctx, r.call(), c, rng.IntN(next[c]))
					if e := errs.As(err); err != nil && (e == nil || e.Kind != errs.NotFound) {
						t.Fatal(err)
					}
				case op < 80 && next[c] > 0:
					r.configure(map[string]any{"conversation": c, "buffer_size": 1 + rng.IntN(5)})
				case op < 82 && next[c] > 0:
					if _, err := r.h.Drop(ctx, r.call(), c); err != nil {
						t.Fatal(err)
					}
					next[c] = 0
				case op < 85 && next[c] > 0:
					backend := []string{history.BackendInMemory, history.BackendDurable}[rng.IntN(2)]
					if err := r.h.Move(ctx, r.call(), c, backend); err != nil {
						t.Fatal(err)
					}
				}
				for range 3 {
					words := make([]string, 1+rng.IntN(3))
					for i := range words {
						words[i] = propertyWords[rng.IntN(len(propertyWords))]
					}
					req := history.SearchRequest{Conversation: convs[rng.IntN(len(convs))], Query: strings.Join(words, " "), Limit: 1 + rng.IntN(15)}
					if rng.IntN(3) == 0 {
						req.Speaker = []string{"user", "assistant", "system"}[rng.IntN(3)]
					}
					fast, a, b := searchBothWays(t, r, req)
					if a != b {
						t.Fatalf("step %d, %+v:\nfrom memory %s\nscanning    %s", step, req, a, b)
					}
					checked += len(fast)
				}
			}
			if checked < 1000 {
				t.Errorf("only %d hits compared", checked)
			}
			// Drops and moves throw an index away; everything else is
			// applied to it.
			if n := history.IndexBuilds(r.h); n > 60 {
				t.Errorf("%d index builds in 400 steps: changes are not applied", n)
			}
		})
	}
}

// TestSearchKeepsPostingsCurrentAfterWrites: a search, then writes and a
// delete, then a search that finds the new utterance and not the deleted
// one, from the postings in memory (not read again from the store).
func TestSearchKeepsPostingsCurrentAfterWrites(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	r.write("", "user", "The Lisbon flight is booked")
	r.write("", "assistant", "Budget review on Thursday")
	search := func(q string) []history.Hit {
		t.Helper()
		hits, err := history.SearchPostings(r.h, ctx, r.call(), history.SearchRequest{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	if hits := search("lisbon"); len(hits) != 1 || hits[0].UtteranceIndex != 0 {
		t.Fatalf("hits %+v", hits)
	}
	builds := history.IndexBuilds(r.h)
	r.write("", "user", "Another Lisbon trip in May")
	if _, err := r.h.Delete(ctx, r.call(), "", 0); err != nil {
		t.Fatal(err)
	}
	if hits := search("lisbon"); len(hits) != 1 || hits[0].UtteranceIndex != 2 {
		t.Fatalf("after a write and a delete: hits %+v", hits)
	}
	if n := history.IndexBuilds(r.h); n != builds {
		t.Errorf("the postings were read again (%d builds, then %d): the changes were not applied", builds, n)
	}
	if v, ok := history.CachedIndexVersion(r.h, "default"); !ok || v != 4 {
		t.Errorf("cached index version %d, %v; want 4 (three writes and a delete)", v, ok)
	}
}

// TestSearchSkippingEqualsScoringAll: over 3,000 utterances of the
// benchmark corpus — enough that the best few are in hand long before the
// postings of a common word end, so that the search skips what cannot
// reach them — every query of one to four of its words, with and without
// a speaker, answers exactly what scoring every posting in the store does.
func TestSearchSkippingEqualsScoringAll(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	c := newCorpus(t)
	r.configure(map[string]any{"buffer_size": 10_000})
	var vocab []string
	reqs := func(yield func(history.WriteRequest) bool) {
		for i := range 3000 {
			s := c.next()
			if i%50 == 0 {
				vocab = append(vocab, strings.Fields(s)...)
			}
			if !yield(history.WriteRequest{Speaker: []string{"user", "assistant", "system"}[i%3], Text: s}) {
				return
			}
		}
	}
	ctx := context.Background()
	if _, err := r.h.BulkLoad(ctx, r.call(), reqs); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	queries := 300
	if raceDetector {
		queries = 60
	}
	for n := range queries {
		words := make([]string, 1+rng.IntN(4))
		for i := range words {
			words[i] = vocab[rng.IntN(len(vocab))]
		}
		req := history.SearchRequest{Query: strings.Join(words, " "), Limit: []int{1, 3, 10, 25}[rng.IntN(4)]}
		if n%3 == 0 {
			req.Speaker = []string{"user", "assistant", "system"}[rng.IntN(3)]
		}
		_, a, b := searchBothWays(t, r, req)
		if a != b {
			t.Fatalf("%+v:\nskipping %s\nscanning %s", req, a, b)
		}
	}
}

// TestSearchWhileWriting: searches racing with writes and deletes of the
// same conversation each answer without error, and once the writers are
// done the search from memory equals the store scan (run with -race for
// the locking of the postings in memory).
func TestSearchWhileWriting(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	r.write("", "user", "budget flight lisbon")
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				res, err := r.h.Write(ctx, r.call(), history.WriteRequest{Speaker: speakerOf(i), Text: fmt.Sprintf("writer %d: budget %d flight", w, i)})
				if err == nil && i%5 == 0 {
					_, err = r.h.Delete(ctx, r.call(), "", res.Utterance.UtteranceIndex)
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 60 {
				if _, err := history.SearchPostings(r.h, ctx, r.call(), history.SearchRequest{Query: "budget flight", Limit: 5}); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	req := history.SearchRequest{Query: "budget flight writer", Limit: 200}
	fast, a, b := searchBothWays(t, r, req)
	if a != b || len(fast) != 1+3*40-3*8 {
		t.Errorf("after the race, %d hits from memory (want %d):\n%s\nscanning:\n%s", len(fast), 1+3*40-3*8, a, b)
	}
}

// searchBothWays runs req from the postings in memory and by scanning the
// store's posting keys (the reference), and returns the first's hits and
// both results as JSON, to compare.
func searchBothWays(t *testing.T, r *rig, req history.SearchRequest) (fast []history.Hit, a, b string) {
	t.Helper()
	ctx := context.Background()
	fast, err := history.SearchPostings(r.h, ctx, r.call(), req)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := history.SearchScanning(r.h, ctx, r.call(), req)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(fast)
	jb, _ := json.Marshal(slow)
	return fast, string(ja), string(jb)
}
