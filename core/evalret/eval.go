package evalret

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
	rank "github.com/engram-console/engram/core/retrieval"
)

// The retrievers Run knows, and the splits it reports.
const (
	// RetrieverHistory is the product's history.search, as it is.
	RetrieverHistory = "history"
	// RetrieverBM25 is plain BM25 over the turns' words: the baseline.
	RetrieverBM25 = "bm25"
	// RetrieverHybrid is core/retrieval's hybrid ranker over the turns.
	RetrieverHybrid = "hybrid"
	// All asks for every retriever, or every split.
	All = "all"
)

// Retrievers are the retrievers Run knows, in the order it reports them.
var Retrievers = []string{RetrieverHistory, RetrieverBM25, RetrieverHybrid}

// ScriptedRetrievers use the scripted hashed embedding model
// (llmtest.Hashed): run only when named, since their figures are a
// stand-in's, not a real model's.
var ScriptedRetrievers = []string{RetrieverHashed, RetrieverHybridHashed}

// Retriever finds the turns of a conversation that answer a question.
type Retriever interface {
	// Search returns the ids of at most k turns of the conversation, the
	// most relevant first.
	Search(ctx context.Context, conversation, query string, k int) ([]string, error)
}

// Options say what Run measures.
type Options struct {
	// Retrievers to run (every one of Retrievers when empty).
	Retrievers []string
	// Split is dev, heldout or all (the default): all reports each split
	// and both together.
	Split string
	// Progress, when set, receives a line per conversation loaded and per
	// retriever run (the command passes standard error).
	Progress io.Writer
	// Now times the searches (time.Now when nil; tests give a clock that
	// moves by a fixed step, so that the latency they see repeats).
	Now func() time.Time
	// Details adds each question's outcome to every run (Run.Details):
	// where its first evidence came and what was ranked above it.
	Details bool
}

// Result is what Run measured.
type Result struct {
	// Set is the set's name (if it has one).
	Set string `json:"set,omitempty"`
	// Conversations, Turns and Questions count the set: its questions in
	// the splits asked for.
	Conversations int `json:"conversations"`
	Turns         int `json:"turns"`
	Questions     int `json:"questions"`
	// K is how deep a ranking is scored.
	K int `json:"k"`
	// Runs are one retriever over one split each: for each split, each
	// retriever, in the order of Retrievers.
	Runs []Run `json:"runs"`
}

// Run is one retriever's figures over one split.
type Run struct {
	Retriever string `json:"retriever"`
	// Split is dev, heldout or all (both).
	Split string `json:"split"`
	// Overall are the figures over every question of the split;
	// Categories per category, in the order of Categories (those with
	// questions).
	Overall    Scores   `json:"overall"`
	Categories []Scores `json:"categories"`
	// Failed counts the questions whose search returned an error (scored
	// as finding nothing); FirstFailure says why the first did.
	Failed       int    `json:"failed"`
	FirstFailure string `json:"first_failure,omitempty"`
	// SearchP50Ms is the median wall time of one search, in milliseconds.
	SearchP50Ms float64 `json:"search_p50_ms"`
	// Details are each question's outcome, when asked for (absent
	// otherwise), in the set's order.
	Details []Outcome `json:"details,omitempty"`
}

// Outcome is how a retriever answered one question.
type Outcome struct {
	Question string `json:"question"`
	Category string `json:"category"`
	// Rank is the place of the first evidence turn in the top K, 0 when
	// none is there.
	Rank int `json:"rank"`
	// AllEvidence: every evidence turn is in the top K.
	AllEvidence bool    `json:"all_evidence"`
	NDCG10      float64 `json:"ndcg_at_10"`
	// Ranked are the turns the retriever returned, best first.
	Ranked []string `json:"ranked"`
	// Error is why the search failed, if it did.
	Error string `json:"error,omitempty"`
}

// Check checks the options, naming the field at fault, and fills in
// their defaults.
func (o *Options) Check() error {
	switch o.Split {
	case "":
		o.Split = All
	case Dev, Heldout, All:
	default:
		return errs.New(errs.Validation, "split: %s is unknown; use dev, heldout or all", show(o.Split)).With("field", "split")
	}
	if len(o.Retrievers) == 0 || slices.Contains(o.Retrievers, All) {
		o.Retrievers = Retrievers
	}
	for _, r := range o.Retrievers {
		if !slices.Contains(Retrievers, r) && !slices.Contains(ScriptedRetrievers, r) {
			return errs.New(errs.Validation, "retriever: %s is unknown; use %s or all", show(r), strings.Join(append(slices.Clone(Retrievers), ScriptedRetrievers...), ", ")).With("field", "retriever")
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// Evaluate checks the options, then loads the set into a scratch engine
// (when a retriever needs one), asks every question of each retriever and
// scores the answers. Nothing outside the scratch engine is written.
func Evaluate(ctx context.Context, set *Set, opts Options) (*Result, error) {
	if err := opts.Check(); err != nil {
		return nil, err
	}
	// The scratch engine is another engine: what the context says about
	// the request running (the action eval.retrieval runs in) is not
	// about its requests.
	ctx = detached{ctx}
	res := &Result{Set: set.Name, Conversations: len(set.Conversations), K: K}
	for _, c := range set.Conversations {
		for _, s := range c.Sessions {
			res.Turns += len(s.Turns)
		}
	}
	var questions []Question
	for _, q := range set.Questions {
		if opts.Split == All || q.SplitOf() == opts.Split {
			questions = append(questions, q)
		}
	}
	res.Questions = len(questions)
	splits := []string{opts.Split}
	if opts.Split == All {
		splits = []string{Dev, Heldout, All}
	}
	byRetriever := map[string][]asked{}
	for _, name := range opts.Retrievers {
		r, closeIt, err := open(ctx, name, set, opts.Progress)
		if err != nil {
			return nil, err
		}
		answers, err := ask(ctx, r, questions, opts.Now)
		closeErr := closeIt()
		if err != nil {
			return nil, err
		}
		if closeErr != nil {
			return nil, closeErr
		}
		byRetriever[name] = answers
		progress(opts.Progress, "engram eval: %s answered %d questions\n", name, len(questions))
	}
	for _, split := range splits {
		for _, name := range opts.Retrievers {
			run := score(name, split, byRetriever[name])
			if opts.Details {
				run.Details = details(split, byRetriever[name])
			}
			res.Runs = append(res.Runs, run)
		}
	}
	return res, nil
}

// asked is a question and how a retriever answered it.
type asked struct {
	q      Question
	j      judged
	ranked []string
	took   time.Duration
	failed error
}

// ask puts every question to r.
func ask(ctx context.Context, r Retriever, questions []Question, now func() time.Time) ([]asked, error) {
	out := make([]asked, 0, len(questions))
	for _, q := range questions {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := now()
		ranked, err := r.Search(ctx, q.Conversation, q.Text, K)
		a := asked{q: q, took: now().Sub(start), failed: err, ranked: ranked[:min(len(ranked), K)]}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil {
			a.j = judge(ranked, q.Evidence)
		}
		out = append(out, a)
	}
	return out, nil
}

// score sums up one retriever's answers over one split.
func score(name, split string, answers []asked) Run {
	run := Run{Retriever: name, Split: split}
	var overall tally
	perCat := map[string]*tally{}
	var took []time.Duration
	for _, a := range answers {
		if split != All && a.q.SplitOf() != split {
			continue
		}
		if a.failed != nil {
			if run.Failed == 0 {
				run.FirstFailure = fmt.Sprintf("question %s: %v", a.q.ID, a.failed)
			}
			run.Failed++
		}
		overall.add(a.j)
		t := perCat[a.q.Category]
		if t == nil {
			t = &tally{}
			perCat[a.q.Category] = t
		}
		t.add(a.j)
		took = append(took, a.took)
	}
	run.Overall = overall.scores("")
	run.Categories = []Scores{}
	for _, c := range Categories {
		if t := perCat[c]; t != nil {
			run.Categories = append(run.Categories, t.scores(c))
		}
	}
	run.SearchP50Ms = median(took)
	return run
}

// details lists each answer of a split.
func details(split string, answers []asked) []Outcome {
	out := []Outcome{}
	for _, a := range answers {
		if split != All && a.q.SplitOf() != split {
			continue
		}
		o := Outcome{Question: a.q.ID, Category: a.q.Category, Rank: a.j.rank, AllEvidence: a.j.all, NDCG10: round(a.j.ndcg), Ranked: a.ranked}
		if o.Ranked == nil {
			o.Ranked = []string{}
		}
		if a.failed != nil {
			o.Error = a.failed.Error()
		}
		out = append(out, o)
	}
	return out
}

func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		_, _ = fmt.Fprintf(w, format, args...) // progress is a courtesy: nowhere to report a failed write
	}
}

// open makes the named retriever over the set, and what closes it.
func open(ctx context.Context, name string, set *Set, prog io.Writer) (Retriever, func() error, error) {
	switch name {
	case RetrieverBM25:
		return NewBM25(set), func() error { return nil }, nil
	case RetrieverHybrid:
		return NewHybrid(set, rank.DefaultParams), func() error { return nil }, nil
	case RetrieverHashed:
		f, err := NewHybridHashed(ctx, set)
		if err != nil {
			return nil, nil, err
		}
		return f.VectorsOnly(), func() error { return nil }, nil
	case RetrieverHybridHashed:
		f, err := NewHybridHashed(ctx, set)
		return f, func() error { return nil }, err
	case RetrieverHistory:
		s, err := Load(ctx, set, prog)
		if err != nil {
			return nil, nil, err
		}
		return s.History(), s.Close, nil
	}
	return nil, nil, errs.New(errs.Validation, "retriever: %s is unknown; use %s or all", show(name), strings.Join(Retrievers, ", ")).With("field", "retriever")
}

// Scratch is an evaluation set loaded into an engine of its own, in
// memory: each conversation of the set is a history conversation of the
// same id, its turns utterances written at their session's time.
type Scratch struct {
	// Engine is the scratch engine (engram's default subsystems, in
	// memory, its clock pinned to each write's time).
	Engine *core.Engine
	// turns are each conversation's turn ids by utterance index.
	turns map[string][]string
	// asked is when each conversation's questions are asked: the day
	// after its last session, as Hybrid asks them (time expressions
	// are read against it).
	asked map[string]time.Time
}

// TurnMeta is the metadata each utterance of a scratch engine carries:
// which turn of the set it is.
type TurnMeta struct {
	TurnID  string `json:"turn_id"`
	Session string `json:"session"`
	// Speaker is the speaker's name in the set (history knows only user
	// and assistant).
	Speaker      string `json:"speaker"`
	ImageCaption string `json:"image_caption,omitempty"`
}

// turnText is what an utterance says for a turn: its text, and its
// image's caption after it as "[image: CAPTION]".
func turnText(t Turn) string {
	text := t.Text
	if c := strings.TrimSpace(t.ImageCaption); c != "" {
		if text != "" {
			text += " "
		}
		text += "[image: " + c + "]"
	}
	return text
}

// Load writes the set into a new scratch engine: every turn through
// history.write, at its session's date-time plus one second per turn
// before it in the session, so that time-aware retrieval sees when each
// was said. Close the Scratch when done.
func Load(ctx context.Context, set *Set, prog io.Writer) (*Scratch, error) {
	ctx = detached{ctx}
	first := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	e, err := core.Open(core.Options{InMemory: true, Clock: clock.NewFixed(first), IDSeed: "eval", HistoryBackend: history.BackendInMemory})
	if err != nil {
		return nil, err
	}
	s := &Scratch{Engine: e, turns: map[string][]string{}, asked: map[string]time.Time{}}
	for _, c := range set.Conversations {
		speaker := map[string]string{}
		for i, sp := range c.Speakers {
			if i == 0 {
				speaker[sp] = "user"
			} else if _, ok := speaker[sp]; !ok {
				speaker[sp] = "assistant"
			}
		}
		for _, ses := range c.Sessions {
			if at := ses.DateTime.AddDate(0, 0, 1); at.After(s.asked[c.ID]) {
				s.asked[c.ID] = at
			}
			for k, t := range ses.Turns {
				if err := ctx.Err(); err != nil {
					return nil, errors.Join(err, s.Close())
				}
				meta, _ := json.Marshal(TurnMeta{TurnID: t.ID, Session: ses.ID, Speaker: t.Speaker, ImageCaption: t.ImageCaption}) // plain strings: cannot fail
				at := ses.DateTime.Add(time.Duration(k) * time.Second)
				w, err := conn.CallAs(ctx, e, conn.Request{At: &at}, history.ActionWrite, history.WriteRequest{
					Conversation: c.ID, Speaker: speaker[t.Speaker], Text: turnText(t), Metadata: meta})
				if err != nil {
					_ = s.Close() // the write's error says what went wrong
					return nil, fmt.Errorf("loading turn %s of conversation %s: %w", t.ID, c.ID, err)
				}
				ids := s.turns[c.ID]
				for len(ids) <= w.Utterance.UtteranceIndex {
					ids = append(ids, "")
				}
				ids[w.Utterance.UtteranceIndex] = t.ID
				s.turns[c.ID] = ids
			}
		}
		progress(prog, "engram eval: loaded conversation %s (%d utterances)\n", c.ID, len(s.turns[c.ID]))
	}
	return s, nil
}

// TurnID is the turn an utterance of the scratch engine stands for.
func (s *Scratch) TurnID(conversation string, utteranceIndex int) (string, bool) {
	ids := s.turns[conversation]
	if utteranceIndex < 0 || utteranceIndex >= len(ids) || ids[utteranceIndex] == "" {
		return "", false
	}
	return ids[utteranceIndex], true
}

// Close closes the scratch engine; what it held is gone.
func (s *Scratch) Close() error { return s.Engine.Close() }

// History is the history.search retriever over the scratch engine.
func (s *Scratch) History() Retriever { return historyRetriever{s} }

// historyRetriever asks history.search, as the product does.
type historyRetriever struct{ s *Scratch }

func (h historyRetriever) Search(ctx context.Context, conversation, query string, k int) ([]string, error) {
	at := h.s.asked[conversation]
	res, err := conn.CallAs(ctx, h.s.Engine, conn.Request{At: &at}, history.ActionSearch, history.SearchRequest{Conversation: conversation, Query: query, Limit: k})
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(res.Results))
	for _, hit := range res.Results {
		if id, ok := h.s.TurnID(conversation, hit.UtteranceIndex); ok {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// detached is a context's cancellation and deadline without its values:
// an engine marks the context of a running action with values, and a
// request of the scratch engine made inside that action must not look
// like a part of it.
type detached struct{ parent context.Context }

func (d detached) Deadline() (time.Time, bool) { return d.parent.Deadline() }
func (d detached) Done() <-chan struct{}       { return d.parent.Done() }
func (d detached) Err() error                  { return d.parent.Err() }
func (d detached) Value(any) any               { return nil }
