package evalret

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/history"
)

// step is a clock that moves 1 ms a reading: every search takes 1 ms.
func step() func() time.Time {
	at := time.Unix(0, 0)
	return func() time.Time { at = at.Add(time.Millisecond); return at }
}

// TestLoadWritesEachTurnAtItsSessionsTime: every turn becomes an
// utterance of the conversation of the same id, at its session's time
// plus a second per turn before it, naming its turn, session and speaker.
func TestLoadWritesEachTurnAtItsSessionsTime(t *testing.T) {
	set, err := ReadFile(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Load(context.Background(), set, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	read, err := conn.Call(context.Background(), s.Engine, history.ActionRead, history.ReadArgs{Conversation: "ana-ben"})
	if err != nil {
		t.Fatal(err)
	}
	if len(read.Utterances) != 6 {
		t.Fatalf("%d utterances, want 6", len(read.Utterances))
	}
	u := read.Utterances[5]
	var meta TurnMeta
	if err := json.Unmarshal(u.Metadata, &meta); err != nil {
		t.Fatal(err)
	}
	want := time.Date(2024, 5, 10, 18, 30, 2, 0, time.UTC)
	if !u.Timestamp.Equal(want) || meta != (TurnMeta{TurnID: "t6", Session: "s2", Speaker: "Ben", ImageCaption: "a plane ticket to Lisbon"}) ||
		u.Speaker != "assistant" || u.Text != "We fly out in June! [image: a plane ticket to Lisbon]" {
		t.Errorf("the last turn was written as %+v %+v", u, meta)
	}
	if id, ok := s.TurnID("ana-ben", 0); !ok || id != "t1" || read.Utterances[0].Speaker != "user" {
		t.Errorf("utterance 0 is turn %q (%v), speaker %s", id, ok, read.Utterances[0].Speaker)
	}
}

// TestEvaluateReportsEachRetrieverOnEachSplit: on the tiny set, runs come
// split by split, the product's retriever before the baseline and the
// hybrid after it, with the questions of each split; all three find the
// kitten, and the baseline and the hybrid find Lisbon in an image's
// caption first.
func TestEvaluateReportsEachRetrieverOnEachSplit(t *testing.T) {
	set, err := ReadFile(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	res, err := Evaluate(context.Background(), set, Options{Now: step(), Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if res.Set != "tiny" || res.Conversations != 1 || res.Turns != 6 || res.Questions != 4 || res.K != 10 || len(res.Runs) != 9 {
		t.Fatalf("result: %+v", res)
	}
	order := []string{"dev/history", "dev/bm25", "dev/hybrid", "heldout/history", "heldout/bm25", "heldout/hybrid", "all/history", "all/bm25", "all/hybrid"}
	questions := map[string]int{Dev: 3, Heldout: 1, All: 4}
	for i, r := range res.Runs {
		if got := r.Split + "/" + r.Retriever; got != order[i] {
			t.Errorf("run %d is %s, want %s", i, got, order[i])
		}
		if r.Overall.Questions != questions[r.Split] || r.Failed != 0 || r.SearchP50Ms != 1 {
			t.Errorf("run %s/%s: %+v", r.Split, r.Retriever, r)
		}
		if r.Split == All && (r.Categories[0].Category != SingleHop || r.Categories[0].Recall10 != 1) {
			t.Errorf("%s did not find the kitten: %+v", r.Retriever, r.Categories[0])
		}
	}
	// bm25 reads the caption as text and finds it first; hybrid weighs
	// the caption field below the text, and Ben's other turn ("going")
	// comes first, but the caption's turn is close behind.
	if temporal := res.Runs[7].Categories[2]; temporal.Category != Temporal || temporal.Recall1 != 1 {
		t.Errorf("bm25 did not find Lisbon in the caption first: %+v", temporal)
	}
	if temporal := res.Runs[8].Categories[2]; temporal.Category != Temporal || temporal.MRR < 0.5 {
		t.Errorf("hybrid did not find Lisbon in the caption among the first two: %+v", temporal)
	}
	for _, line := range []string{"loaded conversation ana-ben (6 utterances)", "history answered 4 questions", "bm25 answered 4 questions", "hybrid answered 4 questions"} {
		if !strings.Contains(progress.String(), line) {
			t.Errorf("progress does not say %q:\n%s", line, progress.String())
		}
	}
	one, err := Evaluate(context.Background(), set, Options{Now: step(), Retrievers: []string{RetrieverBM25}, Split: Heldout})
	if err != nil || len(one.Runs) != 1 || one.Runs[0].Retriever != RetrieverBM25 || one.Questions != 1 {
		t.Errorf("bm25 on heldout: %+v %v", one, err)
	}
}

// TestEvaluateRefusesUnknownOptions names the option and its values.
func TestEvaluateRefusesUnknownOptions(t *testing.T) {
	set, err := ReadFile(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Split: "test"}, `split: "test" is unknown; use dev, heldout or all`},
		{Options{Retrievers: []string{"vector"}}, `retriever: "vector" is unknown; use history, bm25, hybrid, hashed, hybrid+hashed or all`},
	} {
		if _, err := Evaluate(context.Background(), set, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.opts, err, c.want)
		}
	}
}

// TestAFailedSearchIsAMissAndSaysWhy: a question history.search refuses
// (a query of more than 64 different words) scores nothing, and the run
// counts it and says why.
func TestAFailedSearchIsAMissAndSaysWhy(t *testing.T) {
	set, err := ReadFile(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	for i := range 70 {
		words = append(words, "kitten"+strings.Repeat("x", i))
	}
	set.Questions[0].Text = strings.Join(words, " ")
	res, err := Evaluate(context.Background(), set, Options{Now: step(), Retrievers: []string{RetrieverHistory}, Split: Dev})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Runs[0]
	if r.Failed != 1 || !strings.Contains(r.FirstFailure, "question q1: query: at most 64 different words") || r.Categories[0].Recall10 != 0 {
		t.Errorf("%+v", r)
	}
	var table strings.Builder
	if err := WriteTable(&table, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "history: search p50 1.000 ms; 1 searches failed (scored as misses), the first: question q1: query: at most 64") {
		t.Errorf("the table does not say a search failed:\n%s", table.String())
	}
}

// TestDetailsListEachQuestionsOutcome: with Details, every run lists its
// split's questions in the set's order, with the rank of the first
// evidence turn and the turns ranked; without, none.
func TestDetailsListEachQuestionsOutcome(t *testing.T) {
	set, err := ReadFile(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Evaluate(context.Background(), set, Options{Now: step(), Retrievers: []string{RetrieverBM25}, Split: Dev, Details: true})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Runs[0].Details
	if len(d) != 3 || d[0].Question != "q1" || d[1].Question != "q3" || d[2].Question != "q4" {
		t.Fatalf("details: %+v", d)
	}
	for _, o := range d {
		want := judge(o.Ranked, set.Questions[map[string]int{"q1": 0, "q3": 2, "q4": 3}[o.Question]].Evidence)
		if o.Rank != want.rank || o.AllEvidence != want.all || o.NDCG10 != round(want.ndcg) || len(o.Ranked) == 0 || len(o.Ranked) > K {
			t.Errorf("%+v does not agree with its ranking (%+v)", o, want)
		}
	}
	if d[1].Rank != 1 || d[1].Ranked[0] != "t6" {
		t.Errorf("Lisbon's question: %+v", d[1])
	}
	plain, err := Evaluate(context.Background(), set, Options{Now: step(), Retrievers: []string{RetrieverBM25}, Split: Dev})
	if err != nil || plain.Runs[0].Details != nil {
		t.Errorf("details without asking: %+v %v", plain.Runs[0].Details, err)
	}
}
