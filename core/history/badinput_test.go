package history_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
)

// TestBadInput: each bad input is a clear error and changes nothing (every
// key and value of the store compared before and after, the trace and
// sequences aside).
func TestBadInput(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 3})
	for i, s := range richUtterances(5) {
		r.write("", speakerOf(i), s)
	}
	cases := []struct {
		name      string
		action    string
		args      any
		kind      errs.Kind
		fragments []string
	}{
		{"unknown speaker", "history.write", `{"speaker": "robot", "text": "beep"}`, errs.Validation, []string{`unknown speaker "robot"`, "user, assistant or system"}},
		{"speaker in another case", "history.write", `{"speaker": "User", "text": "hi"}`, errs.Validation, []string{`unknown speaker "User"`}},
		{"empty text", "history.write", `{"speaker": "user", "text": ""}`, errs.Validation, []string{"text"}},
		{"blank text", "history.write", `{"speaker": "user", "text": " \n\t "}`, errs.Validation, []string{"text", "needs text"}},
		{"missing text", "history.write", `{"speaker": "user"}`, errs.Validation, []string{"text"}},
		{"negative turn", "history.write", `{"speaker": "user", "text": "x", "turn_number": -1}`, errs.Validation, []string{"turn_number"}},
		{"metadata not an object", "history.write", `{"speaker": "user", "text": "x", "metadata": [1]}`, errs.Validation, []string{"metadata", "JSON object"}},
		{"bad conversation id", "history.write", `{"conversation": "a/b", "speaker": "user", "text": "x"}`, errs.Validation, []string{"conversation", "'/'"}},
		{"unknown field", "history.write", `{"speaker": "user", "text": "x", "speeker": "user"}`, errs.Validation, nil},
		{"buffer_size 0", "history.configure", `{"buffer_size": 0}`, errs.Validation, []string{"buffer_size", "1 or more", "got 0"}},
		{"buffer_size negative", "history.configure", `{"buffer_size": -3}`, errs.Validation, []string{"buffer_size", "got -3"}},
		{"buffer_size 0 on a new conversation", "history.configure", `{"conversation": "new", "buffer_size": 0}`, errs.Validation, []string{"buffer_size"}},
		{"max_tokens negative", "history.configure", `{"max_tokens": -1}`, errs.Validation, []string{"max_tokens"}},
		{"max_tokens under an utterance", "history.configure", `{"max_tokens": 5}`, errs.Budget, []string{"max_tokens=5", "never truncated"}},
		{"summary_token_limit 0", "history.configure", `{"summary_token_limit": 0}`, errs.Validation, []string{"summary_token_limit"}},
		{"configure unknown backend", "history.configure", `{"backend": "s3", "buffer_size": 10}`, errs.Validation, []string{`unknown backend "s3"`, "in-memory or durable"}},
		{"durable on an in-memory engine", "history.configure", `{"backend": "durable"}`, errs.Validation, []string{"durable", "data directory"}},
		{"switch to unknown backend", "history.backend", `{"backend": "redis"}`, errs.Validation, []string{`unknown backend "redis"`}},
		{"switch with no backend", "history.backend", `{}`, errs.Validation, []string{"backend"}},
		{"negative n", "history.last", `{"n": -1}`, errs.Validation, []string{"n", "got -1"}},
		{"negative n via query", "history.query", `{"query": "get_last_n", "data": {"n": -2}}`, errs.Validation, []string{"n"}},
		{"token_limit 0", "history.summary", `{"token_limit": 0}`, errs.Validation, []string{"token_limit", "1 or more"}},
		{"token_limit negative", "history.summary", `{"token_limit": -5}`, errs.Validation, []string{"token_limit"}},
		{"token_limit 0 via query", "history.query", `{"query": "Get summary", "data": {"token_limit": 0}}`, errs.Validation, []string{"token_limit"}},
		{"token_limit fraction via query", "history.query", `{"query": "Get summary", "data": {"token_limit": 2.5}}`, errs.Validation, []string{"token_limit"}},
		{"read unknown speaker", "history.read", `{"speaker": "bot"}`, errs.Validation, []string{"bot"}},
		{"search unknown speaker", "history.search", `{"query": "x", "speaker": "bot"}`, errs.Validation, []string{"bot"}},
		{"search empty query", "history.search", `{"query": "  "}`, errs.Validation, []string{"query"}},
		{"search negative limit", "history.search", `{"query": "x", "limit": -1}`, errs.Validation, []string{"limit"}},
		{"search when that names no time", "history.search", `{"query": "flight", "when": "when pigs fly"}`, errs.Validation, []string{"when", `"when pigs fly" names no time`, "last summer"}},
		{"search when of a number only", "history.search", `{"query": "flight", "when": "42"}`, errs.Validation, []string{"when", "names no time"}},
		{"search quote of 10,000 words", "history.search", map[string]any{"query": `"` + strings.Repeat("flight budget ", 5000) + `"`}, errs.Validation, []string{"query", "at most 4096 bytes"}},
		{"search query of 10,000 different words", "history.search", map[string]any{"query": manyTerms(10000)[:4000]}, errs.Validation, []string{"query", "at most 64 different words"}},
		{"search query of 10,000 words", "history.search", map[string]any{"query": strings.Repeat("flight budget ", 5000)}, errs.Validation, []string{"query", "at most 4096 bytes", "a few distinctive words"}},
		{"search query of 100 KB", "history.search", map[string]any{"query": strings.Repeat("x", 100<<10)}, errs.Validation, []string{"query", "at most 4096 bytes, not 102400"}},
		{"search query of 65 different words", "history.search", map[string]any{"query": manyTerms(65)}, errs.Validation, []string{"query", "at most 64 different words", "not 65"}},
		{"delete negative index", "history.delete", `{"utterance_index": -1}`, errs.Validation, []string{"utterance_index"}},
		{"delete unknown index", "history.delete", `{"utterance_index": 99}`, errs.NotFound, []string{"no utterance 99"}},
		{"delete in unknown conversation", "history.delete", `{"conversation": "nope", "utterance_index": 0}`, errs.NotFound, []string{`"nope"`}},
		{"add with an unknown data field", "history.query", `{"query": "Add utterance", "data": {"speaker": "user", "text": "x", "colour": "red"}}`, errs.Validation, []string{"data.colour"}},
		{"add with a bad speaker", "history.query", `{"query": "Add utterance", "data": {"speaker": "ghost", "text": "boo"}}`, errs.Validation, []string{"ghost"}},
		{"turn.end with bad history updates", "turn.end", `{"updates": {"history": {"speaker": "user"}}}`, errs.Validation, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r.h.Settle()
			before := dump(t, r.e.Env().Store)
			turn := ""
			if c.action == "turn.end" {
				turn = "bad-turn" // a turn that ends badly
				if _, err := r.tryIn(turn, "turn.start", `{}`); err != nil {
					t.Fatal(err)
				}
			}
			res, err := r.tryIn(turn, c.action, c.args)
			enginetest.CheckErr(t, c.action, c.args, res, err, c.kind, c.fragments...)
			after := dump(t, r.e.Env().Store)
			if c.action == "turn.end" {
				for k := range after {
					if strings.HasPrefix(k, "turn/") {
						delete(after, k)
					}
				}
			}
			sameDump(t, c.name, before, after)
		})
	}
	// And the conversation reads as before.
	if got := r.read("", ""); !slices.Equal(indexes(got), []int{2, 3, 4}) {
		t.Errorf("after the bad inputs the buffer is %v", indexes(got))
	}
}

// TestUnknownConversation: reading an unknown conversation is an empty
// result (and creates nothing); writing to one creates it.
func TestUnknownConversation(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.h.Settle()
	before := dump(t, r.e.Env().Store)
	if got := r.read("ghost", ""); len(got) != 0 {
		t.Errorf("read = %+v", got)
	}
	if got := r.last("ghost", 3); len(got) != 0 {
		t.Errorf("last = %+v", got)
	}
	if s := r.summary("ghost", 10); s.Text != "" {
		t.Errorf("summary = %+v", s)
	}
	if hits := r.search(map[string]any{"conversation": "ghost", "query": "anything"}); len(hits) != 0 {
		t.Errorf("search = %+v", hits)
	}
	st := r.stats("ghost")
	if st.Exists || st.BufferSize != history.DefaultBufferSize || st.SummaryTokenLimit != history.DefaultSummaryTokenLimit {
		t.Errorf("stats = %+v", st)
	}
	var list struct {
		Conversations []struct{ Conversation string } `json:"conversations"`
	}
	r.do("history.list", `{}`, &list)
	if len(list.Conversations) != 0 {
		t.Errorf("list = %+v", list)
	}
	sameDump(t, "reading an unknown conversation", before, dump(t, r.e.Env().Store))

	u := r.write("ghost", "user", "now it exists")
	if u.UtteranceIndex != 0 || u.Conversation != "ghost" {
		t.Errorf("first write = %+v", u)
	}
	if st := r.stats("ghost"); !st.Exists || st.Size != 1 || st.BufferSize != history.DefaultBufferSize {
		t.Errorf("after the write stats = %+v", st)
	}
	r.do("history.list", `{}`, &list)
	if len(list.Conversations) != 1 || list.Conversations[0].Conversation != "ghost" {
		t.Errorf("list = %+v", list)
	}
}

// TestConfigureFailsWhole: a configure that moves the conversation and then
// finds max_tokens too small moves nothing.
func TestConfigureFailsWhole(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, rigOptions{dir: t.TempDir(), historyBackend: history.BackendInMemory})
	r.write("", "user", strings.Repeat("a long utterance of many tokens ", 10))
	r.h.Settle()
	before := dump(t, r.e.Env().Store)
	r.fail("history.configure", map[string]any{"backend": "durable", "max_tokens": 5}, errs.Budget, "max_tokens=5")
	sameDump(t, "a refused configure", before, dump(t, r.e.Env().Store))
	if st := r.stats(""); st.Backend != history.BackendInMemory || st.MaxTokens != 0 || st.Size != 1 {
		t.Errorf("after a refused configure: %+v", st)
	}
	// Switching to an unknown backend leaves it where it is, too.
	r.fail("history.backend", map[string]any{"backend": "tape"}, errs.Validation, "tape")
	if st := r.stats(""); st.Backend != history.BackendInMemory || st.Size != 1 {
		t.Errorf("after a refused switch: %+v", st)
	}
	sameDump(t, "a refused switch", before, dump(t, r.e.Env().Store))
}

// manyTerms is a query of n different search terms.
func manyTerms(n int) string {
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	return strings.Join(words, " ")
}

// TestHugeQueriesAreRefusedFasterThanASearch: a query of 10,000 words or of
// 100 KB is refused (see TestBadInput) in less time than a normal search
// of the same conversation takes: it reads nothing.
func TestHugeQueriesAreRefusedFasterThanASearch(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	c := newCorpus(t)
	for i := range 500 {
		r.write("", speakerOf(i), c.next())
	}
	ctx := context.Background()
	median := func(q string, wantErr bool) time.Duration {
		var d []time.Duration
		for range 21 {
			start := time.Now()
			_, err := r.h.Search(ctx, r.call(), history.SearchRequest{Query: q})
			d = append(d, time.Since(start))
			if (err != nil) != wantErr {
				t.Fatalf("search of %d bytes: %v", len(q), err)
			}
		}
		slices.Sort(d)
		return d[len(d)/2]
	}
	normal := median("Lisbon flight", false)
	for name, q := range map[string]string{"10,000 words": strings.Repeat("flight budget ", 5000), "100 KB": strings.Repeat("x", 100<<10)} {
		if refused := median(q, true); refused > normal {
			t.Errorf("a query of %s is refused in %v, a normal search takes %v", name, refused, normal)
		}
	}
}
