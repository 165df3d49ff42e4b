package history_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/engram-console/engram/core/retrieval"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// t0 is the seed's date.
var t0 = time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)

// rig is an engine with the history (and the cortex, as in a real engram)
// registered, the *History at hand for the Go API, and a fixed clock. The
// shared enginetest.Rig runs the actions; try, do and fail are its Try, Do
// and Fail as the engine's agent, which every test here acts as.
type rig struct {
	enginetest.Rig
	t     testing.TB
	e     *core.Engine
	h     *history.History
	clock *clock.Fixed
}

type rigOptions struct {
	dir            string // a durable store there ("" : in memory)
	historyBackend string
	holdFolds      bool // leave every fold pending (as a crash right after the write)
	bulkChunk      int  // BulkLoad's writes per transaction (0: the product's)
	llm            llm.Provider
	// keep: the caller closes the engine (data shared by benchmarks, which
	// outlives the benchmark that built it).
	keep bool
}

func newRig(t testing.TB) *rig { return newRigWith(t, rigOptions{}) }

func newRigWith(t testing.TB, o rigOptions) *rig {
	t.Helper()
	r := &rig{t: t, clock: clock.NewFixed(t0)}
	e, err := core.Open(core.Options{
		InMemory: o.dir == "", DataDir: o.dir, Clock: r.clock, IDSeed: "history test", LLM: o.llm,
		Subsystems: []core.Subsystem{
			func(env *kit.Env) error { cortex.Register(env); return nil },
			func(env *kit.Env) error {
				var err error
				opts := history.Options{DefaultBackend: o.historyBackend}
				if o.holdFolds {
					opts = history.HoldFolds(opts)
				}
				if o.bulkChunk > 0 {
					opts = history.WithBulkChunk(opts, o.bulkChunk)
				}
				r.h, err = history.Register(env, opts)
				return err
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.e = e
	r.Rig = enginetest.ForConn(t, e)
	if !o.keep {
		t.Cleanup(func() {
			if err := e.Close(); err != nil {
				t.Errorf("closing the engine: %v", err)
			}
		})
	}
	return r
}

// try runs an action (args: a JSON string or a Go value).
func (r *rig) try(name string, args any) (json.RawMessage, error) {
	r.t.Helper()
	return r.Try(enginetest.Who{}, name, args)
}

// tryIn runs an action as part of a turn.
func (r *rig) tryIn(turn, name string, args any) (json.RawMessage, error) {
	r.t.Helper()
	return r.Try(enginetest.Who{Turn: turn}, name, args)
}

// do runs an action that must succeed, decoding its result into out (if not nil).
func (r *rig) do(name string, args any, out any) json.RawMessage {
	r.t.Helper()
	return r.Do(enginetest.Who{}, name, args, out)
}

// fail runs an action that must fail with kind, its message holding every fragment.
func (r *rig) fail(name string, args any, kind errs.Kind, fragments ...string) *errs.Error {
	r.t.Helper()
	return r.Fail(enginetest.Who{}, name, args, kind, fragments...)
}

var (
	checkErr = enginetest.CheckErr
	short    = enginetest.Short
)

// utt is an utterance as the actions return it.
type utt struct {
	Conversation   string          `json:"conversation"`
	UtteranceIndex int             `json:"utterance_index"`
	Speaker        string          `json:"speaker"`
	Text           string          `json:"text"`
	TurnNumber     int             `json:"turn_number"`
	Timestamp      time.Time       `json:"timestamp"`
	TokenCount     int             `json:"token_count"`
	Metadata       json.RawMessage `json:"metadata"`
	Evicted        bool            `json:"evicted"`
	EvictedAt      *time.Time      `json:"evicted_at"`
	// search results
	RelevanceScore float64  `json:"relevance_score"`
	Lexical        float64  `json:"lexical_score"`
	Semantic       *float64 `json:"semantic_score"`
	// Why explains a search result (every one has it).
	Why *retrieval.Why `json:"why"`
}

// part is a hit's why's part of that name (zero when absent).
func (u utt) part(name string) retrieval.Part {
	if u.Why != nil {
		for _, p := range u.Why.Parts {
			if p.Name == name {
				return p
			}
		}
	}
	return retrieval.Part{}
}

// jsonOf is v as JSON.
func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// matching are the hits, each checked to hold a term of the query (a
// lexical part, or a literal or quote part for a search of stop words or
// a quote) or, with a model, to be close in meaning (a vector rank): a
// turn the ranker lifted only for a match next to it is no result.
func matching(t testing.TB, hits []utt) []utt {
	t.Helper()
	for _, h := range hits {
		switch {
		case h.Why == nil:
			t.Errorf("hit %d has no why", h.UtteranceIndex)
		case h.part(retrieval.PartLexical).Value > 0, h.part(history.PartLiteral).Value > 0, h.part(history.PartQuote).Value > 0:
		case h.Why.Fusion != nil && h.Why.Fusion.VectorRank > 0:
		default:
			t.Errorf("hit %d %q holds no word of the query: %+v", h.UtteranceIndex, h.Text, h.Why)
		}
	}
	return hits
}

type summaryOut struct {
	Text       string `json:"text"`
	TokenCount int    `json:"token_count"`
	Covers     []int  `json:"covers"`
	Writer     string `json:"writer"`
}

type statsOut struct {
	Conversation      string `json:"conversation"`
	Exists            bool   `json:"exists"`
	Backend           string `json:"backend"`
	Size              int    `json:"size"`
	BufferSize        int    `json:"buffer_size"`
	TotalTokens       int    `json:"total_tokens"`
	MaxTokens         int    `json:"max_tokens"`
	EvictedCount      int    `json:"evicted_count"`
	Archived          int    `json:"archived"`
	NextIndex         int    `json:"next_index"`
	SummaryTokenLimit int    `json:"summary_token_limit"`
	Summary           summaryOut
	LastEviction      *struct {
		Indexes []int  `json:"indexes"`
		Reason  string `json:"reason"`
	} `json:"last_eviction"`
}

// query runs history.query and returns what it understood and its result.
func (r *rig) query(q string, data map[string]any, out any) string {
	r.t.Helper()
	args := map[string]any{"query": q}
	if data != nil {
		args["data"] = data
	}
	var res struct {
		Understood string          `json:"understood"`
		Result     json.RawMessage `json:"result"`
	}
	r.do("history.query", args, &res)
	if out != nil {
		if err := json.Unmarshal(res.Result, out); err != nil {
			r.t.Fatalf("query %q: decoding %s: %v", q, short(string(res.Result)), err)
		}
	}
	return res.Understood
}

// add writes an utterance through history.query ("Add utterance"), the
// seed's way, and returns it.
func (r *rig) add(conv, speaker, text string) utt {
	r.t.Helper()
	var res struct {
		Utterance utt `json:"utterance"`
	}
	data := map[string]any{"speaker": speaker, "text": text}
	if conv != "" {
		data["conversation"] = conv
	}
	if u := r.query("Add utterance", data, &res); u != "history.write" {
		r.t.Fatalf("Add utterance understood as %q", u)
	}
	return res.Utterance
}

// write records an utterance with history.write.
func (r *rig) write(conv, speaker, text string) utt {
	r.t.Helper()
	var res struct {
		Utterance utt   `json:"utterance"`
		Evicted   []int `json:"evicted"`
	}
	r.do("history.write", map[string]any{"conversation": conv, "speaker": speaker, "text": text}, &res)
	// The fold into the summary (and a model's summary) follow in the
	// background: tests look at them once they are done.
	r.h.Settle()
	return res.Utterance
}

func (r *rig) configure(args map[string]any) statsOut {
	r.t.Helper()
	var s statsOut
	r.do("history.configure", args, &s)
	return s
}

func (r *rig) read(conv, speaker string) []utt {
	r.t.Helper()
	var res struct {
		Utterances []utt `json:"utterances"`
	}
	r.do("history.read", map[string]any{"conversation": conv, "speaker": speaker}, &res)
	return res.Utterances
}

func (r *rig) last(conv string, n int) []utt {
	r.t.Helper()
	var res struct {
		Utterances []utt `json:"utterances"`
	}
	r.do("history.last", map[string]any{"conversation": conv, "n": n}, &res)
	return res.Utterances
}

func (r *rig) summary(conv string, limit int) summaryOut {
	r.t.Helper()
	args := map[string]any{"conversation": conv}
	if limit > 0 {
		args["token_limit"] = limit
	}
	var res struct {
		Summary summaryOut `json:"summary"`
	}
	r.do("history.summary", args, &res)
	return res.Summary
}

func (r *rig) search(args map[string]any) []utt {
	r.t.Helper()
	var res struct {
		Results []utt `json:"results"`
	}
	r.do("history.search", args, &res)
	return res.Results
}

func (r *rig) stats(conv string) statsOut {
	r.t.Helper()
	var s statsOut
	r.do("history.stats", map[string]any{"conversation": conv}, &s)
	return s
}

func texts(us []utt) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.Text
	}
	return out
}

func indexes(us []utt) []int {
	out := make([]int, len(us))
	for i, u := range us {
		out[i] = u.UtteranceIndex
	}
	return out
}

// dump is every key and value of a store, but the trace, its index and
// Badger's sequences (which a failed action may legitimately touch: a
// leased sequence, a trace entry saying it failed).
func dump(t testing.TB, st *storage.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := st.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Prefix(nil), func(k, v []byte) error {
			key := string(k)
			if strings.HasPrefix(key, storage.PrefixTrace) || strings.HasPrefix(key, storage.PrefixIndex+"trace/") ||
				strings.HasPrefix(key, storage.PrefixSeq) || bytes.HasPrefix(k, []byte("!badger!")) {
				return nil
			}
			out[key] = string(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameDump reports the differences between two dumps.
func sameDump(t testing.TB, what string, before, after map[string]string) {
	t.Helper()
	var diffs []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			diffs = append(diffs, "removed "+k)
		} else if w != v {
			diffs = append(diffs, fmt.Sprintf("changed %s: %s -> %s", k, short(v), short(w)))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, "added "+k)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("%s changed the store:\n  %s", what, strings.Join(diffs, "\n  "))
	}
}

// call is an action.Call for the Go API, as the engine's default agent
// (which the actions of these tests act as).
func (r *rig) call() action.Call {
	return action.Call{Principal: core.DefaultAgent, Clock: r.e.Clock()}
}
