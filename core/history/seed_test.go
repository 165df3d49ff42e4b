package history_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// The seed's tests (seed 001, 7.1–7.19), one Go test each, driven the way
// the seed drives the daemon: through history.query where it says query(),
// and through the history.* actions (engine.Do) otherwise.

// numbered are seed utterances "utterance 1" … "utterance n", each with a
// little content of its own.
func numbered(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("Utterance %d: item %d of the list, about topic%d.", i+1, i+1, i+1)
	}
	return out
}

func speakerOf(i int) string { return []string{"user", "assistant"}[i%2] }

func TestHistory_7_1_BufferKeepsLastN(t *testing.T) {
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 5})
	all := numbered(7)
	for i, s := range all {
		r.add("", speakerOf(i), s)
	}
	var got struct {
		Utterances []utt `json:"utterances"`
	}
	if u := r.query("Get all utterances", nil, &got); u != "history.read" {
		t.Fatalf("understood %q", u)
	}
	if want := all[2:]; !slices.Equal(texts(got.Utterances), want) {
		t.Fatalf("buffer = %q, want utterances 3-7 %q", texts(got.Utterances), want)
	}
	if want := []int{2, 3, 4, 5, 6}; !slices.Equal(indexes(got.Utterances), want) {
		t.Errorf("indexes = %v, want %v", indexes(got.Utterances), want)
	}
	st := r.stats("")
	if st.Size != 5 || st.EvictedCount != 2 || st.BufferSize != 5 {
		t.Errorf("stats: size %d, evicted %d, buffer_size %d; want 5, 2, 5", st.Size, st.EvictedCount, st.BufferSize)
	}
	if !slices.Equal(st.Summary.Covers, []int{0, 1}) {
		t.Errorf("the evicted utterances 1-2 (indexes 0, 1) should be summarised; covers %v", st.Summary.Covers)
	}
}

func TestHistory_7_2_FIFOEviction(t *testing.T) {
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 3})
	var evictions [][]int
	for i, s := range []string{"A", "B", "C", "D", "E"} {
		var res struct {
			Evicted []int `json:"evicted"`
		}
		r.query("Add utterance", map[string]any{"speaker": speakerOf(i), "text": s}, &res)
		evictions = append(evictions, res.Evicted)
	}
	var got struct {
		Utterances []utt `json:"utterances"`
	}
	r.query("Get all utterances", nil, &got)
	if want := []string{"C", "D", "E"}; !slices.Equal(texts(got.Utterances), want) {
		t.Fatalf("buffer = %q, want %q", texts(got.Utterances), want)
	}
	// Oldest first: A went when D came, B when E came.
	if want := fmt.Sprint([][]int{{}, {}, {}, {0}, {1}}); fmt.Sprint(evictions) != want {
		t.Errorf("evictions per write = %v, want %v", evictions, want)
	}
}

func TestHistory_7_3_UtteranceIndexing(t *testing.T) {
	r := newRig(t)
	var got []int
	for i, s := range numbered(5) {
		got = append(got, r.add("", speakerOf(i), s).UtteranceIndex)
	}
	if want := []int{0, 1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("written indexes = %v, want %v", got, want)
	}
	read := r.read("", "")
	if want := []int{0, 1, 2, 3, 4}; !slices.Equal(indexes(read), want) {
		t.Errorf("read indexes = %v, want %v", indexes(read), want)
	}
	if read[0].Text != "Utterance 1: item 1 of the list, about topic1." || read[4].Text != numbered(5)[4] {
		t.Errorf("utterance 1 should have index 0 and utterance 5 index 4: %q", texts(read))
	}
	// Indexes are never reused: after eviction and deletion they go on.
	r.configure(map[string]any{"buffer_size": 2})
	r.do("history.delete", map[string]any{"utterance_index": 4}, nil)
	if u := r.write("", "user", "sixth"); u.UtteranceIndex != 5 {
		t.Errorf("the next utterance after 0-4 (4 deleted) got index %d, want 5", u.UtteranceIndex)
	}
}

func TestHistory_7_4_SpeakerRecorded(t *testing.T) {
	r := newRig(t)
	for _, sp := range history.Speakers {
		r.add("", sp, "said by the "+sp)
	}
	read := r.read("", "")
	if len(read) != 3 {
		t.Fatalf("read %d utterances, want 3", len(read))
	}
	for i, want := range []string{"user", "assistant", "system"} {
		if read[i].Speaker != want || read[i].Text != "said by the "+want {
			t.Errorf("utterance %d: speaker %q (%q), want %q", i, read[i].Speaker, read[i].Text, want)
		}
	}
}

func TestHistory_7_5_TurnNumberTracked(t *testing.T) {
	// By default a user utterance starts the next turn and the others stay
	// in it: user, assistant, user, assistant, user, assistant → 1,1,2,2,3,3.
	r := newRig(t)
	for i := range 6 {
		r.add("", speakerOf(i), fmt.Sprintf("line %d", i+1))
	}
	var turns []int
	for _, u := range r.read("", "") {
		turns = append(turns, u.TurnNumber)
	}
	if want := []int{1, 1, 2, 2, 3, 3}; !slices.Equal(turns, want) {
		t.Errorf("implicit turn numbers = %v, want %v", turns, want)
	}
	// Given explicitly, as the seed writes "2 utterances at turn 1", …
	// (here both by the assistant, which would not start a turn by itself).
	for i := range 6 {
		r.query("Add utterance", map[string]any{"conversation": "explicit", "speaker": "assistant",
			"text": fmt.Sprintf("line %d", i+1), "turn_number": i/2 + 1}, nil)
	}
	turns = nil
	for _, u := range r.read("explicit", "") {
		turns = append(turns, u.TurnNumber)
	}
	if want := []int{1, 1, 2, 2, 3, 3}; !slices.Equal(turns, want) {
		t.Errorf("explicit turn numbers = %v, want %v", turns, want)
	}
}

// entitiesOf is the union of the key entities of each text.
func entitiesOf(texts ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range texts {
		for _, e := range text.Entities(s) {
			if k := text.Normalize(e); !seen[k] {
				seen[k] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// missing lists the entities a summary lost.
func missing(entities []string, summary string) []string {
	var out []string
	for _, e := range entities {
		if text.Coverage([]string{e}, summary) < 1 {
			out = append(out, e)
		}
	}
	return out
}

var seedConversation = []string{
	"Hi, I'm Maria Lopez from Acme Corp. We need to book the Lisbon venue for the product launch on March 14th.",
	"Sure, Maria. The budget is $40,000 and Tom Becker will send the contract by Friday.",
	"Great. Please also invite 120 guests from the partner list.",
	"I'll draft the invitation today.",
	"Thanks, that's all for now.",
}

func TestHistory_7_6_EvictedSummarized(t *testing.T) {
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 3})
	for i, s := range seedConversation[:3] {
		r.add("", speakerOf(i), s)
	}
	if s := r.summary("", 0); s.Text != "" || len(s.Covers) != 0 {
		t.Fatalf("nothing was evicted yet, but the summary is %+v", s)
	}
	for i, s := range seedConversation[3:] {
		r.add("", speakerOf(i+3), s)
	}
	var got struct {
		Summary summaryOut `json:"summary"`
	}
	if u := r.query("Get summary", nil, &got); u != "history.summary" {
		t.Fatalf("understood %q", u)
	}
	s := got.Summary
	if len(s.Text) < 50 {
		t.Errorf("summary %q is %d characters, want at least 50", s.Text, len(s.Text))
	}
	if !slices.Equal(s.Covers, []int{0, 1}) {
		t.Errorf("summary covers %v, want the evicted utterances 1-2 [0 1]", s.Covers)
	}
	want := entitiesOf(seedConversation[:2]...)
	if len(want) < 8 {
		t.Fatalf("utterances 1-2 should have plenty of key entities, found %q", want)
	}
	cov := text.Coverage(want, s.Text)
	t.Logf("coverage %.2f of %d entities %q", cov, len(want), want)
	if cov < 0.8 {
		t.Errorf("summary %q keeps %.0f%% of the key entities of utterances 1-2, want >= 80%%; lost %q", s.Text, 100*cov, missing(want, s.Text))
	}
}

// richUtterances are varied, entity-heavy lines for tests that need a lot
// to summarise.
func richUtterances(n int) []string {
	people := []string{"Maria Lopez", "Tom Becker", "Aisha Khan", "Jonas Weber", "Li Wei", "Sofia Rossi", "Pedro Alves"}
	places := []string{"Lisbon", "Berlin", "Nairobi", "Osaka", "Toronto", "Madrid"}
	verbs := []string{"send", "review", "book", "call", "approve", "ship"}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s will %s the %s order %d by %s; the cost is $%d,%03d and the ticket is OPS-%d.",
			people[i%len(people)], verbs[i%len(verbs)], places[i%len(places)], 100+i,
			[]string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}[i%5], 1+i%9, (i*137)%1000, 4000+i)
	}
	return out
}

func TestHistory_7_7_SummaryTokenLimit(t *testing.T) {
	r := newRig(t)
	r.configure(map[string]any{"summary_token_limit": 100, "buffer_size": 3})
	for i, s := range richUtterances(30) {
		r.add("", speakerOf(i), s)
	}
	var got struct {
		Summary summaryOut `json:"summary"`
	}
	r.query("Get summary", map[string]any{"token_limit": 100}, &got)
	s := got.Summary
	if s.TokenCount > 100 || s.TokenCount == 0 {
		t.Errorf("summary token_count %d, want 1..100", s.TokenCount)
	}
	if n := llm.CountTokens(s.Text); n != s.TokenCount {
		t.Errorf("token_count says %d, the text has %d tokens", s.TokenCount, n)
	}
	if len(s.Covers) != 27 {
		t.Errorf("summary covers %d utterances, want the 27 evicted", len(s.Covers))
	}
	// As stored (the conversation's limit), and a tighter limit at read time.
	for _, limit := range []int{0, 60, 20, 1} {
		s := r.summary("", limit)
		max := 100
		if limit > 0 {
			max = limit
		}
		if s.TokenCount > max || llm.CountTokens(s.Text) != s.TokenCount {
			t.Errorf("token_limit %d: token_count %d (text %d tokens), want <= %d", limit, s.TokenCount, llm.CountTokens(s.Text), max)
		}
	}
	// A larger limit at read time does not lift the conversation's own.
	if s := r.summary("", 1000); s.TokenCount > 100 {
		t.Errorf("token_limit 1000: %d tokens, more than the summary_token_limit of 100", s.TokenCount)
	}
}

func TestHistory_7_8_IncrementalSummaries(t *testing.T) {
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 2})
	conv := []string{
		"Let's plan the Berlin offsite for April 3rd with Jonas Weber.",
		"Jonas confirmed the budget of €12,000 for 25 people.",
		"Aisha Khan will book the Hotel Adlon and send the invoice to finance.",
		"We decided to move the kickoff to 9:30am on Thursday.",
		"Sounds good.",
		"Anything else for the agenda?",
	}
	var summaries []summaryOut
	for i, s := range conv {
		r.add("", speakerOf(i), s)
		if i == 3 || i == 5 {
			summaries = append(summaries, r.summary("", 0))
		}
	}
	if !slices.Equal(summaries[0].Covers, []int{0, 1}) {
		t.Errorf("after utterances 3-4 the summary covers %v, want [0 1]", summaries[0].Covers)
	}
	final := summaries[1]
	if !slices.Equal(final.Covers, []int{0, 1, 2, 3}) {
		t.Errorf("the final summary covers %v, want [0 1 2 3]", final.Covers)
	}
	want := entitiesOf(conv[:4]...)
	cov := text.Coverage(want, final.Text)
	t.Logf("coverage %.2f of %q", cov, want)
	if cov < 0.75 {
		t.Errorf("final summary %q keeps %.0f%% of the entities of utterances 1-4, want >= 75%%; lost %q", final.Text, 100*cov, missing(want, final.Text))
	}
	// Merged, not replaced: what summary 1 kept is still there.
	if c := text.Coverage(entitiesOf(conv[:2]...), final.Text); c < 0.75 {
		t.Errorf("the final summary lost what summary 1 said (coverage of utterances 1-2 %.2f)", c)
	}
}

func TestHistory_7_9_LastN(t *testing.T) {
	r := newRig(t)
	all := numbered(10)
	for i, s := range all {
		r.add("", speakerOf(i), s)
	}
	got := r.last("", 5)
	if !slices.Equal(texts(got), all[5:]) || !slices.Equal(indexes(got), []int{5, 6, 7, 8, 9}) {
		t.Errorf("last 5 = %v %q, want utterances 6-10", indexes(got), texts(got))
	}
	var viaQuery struct {
		Utterances []utt `json:"utterances"`
	}
	if u := r.query("Get last 5 utterances", nil, &viaQuery); u != "history.last" || !slices.Equal(texts(viaQuery.Utterances), all[5:]) {
		t.Errorf("query \"Get last 5 utterances\" (%s) = %q", u, texts(viaQuery.Utterances))
	}
	if got := r.last("", 100); len(got) != 10 {
		t.Errorf("last 100 of 10 = %d utterances", len(got))
	}
	if got := r.last("", 0); len(got) != 0 {
		t.Errorf("last 0 = %d utterances", len(got))
	}
}

func TestHistory_7_10_ReadChronological(t *testing.T) {
	r := newRig(t)
	var want []time.Time
	for i, gap := range []time.Duration{0, time.Millisecond, time.Second, 0, time.Hour} {
		r.clock.Advance(gap)
		want = append(want, r.clock.Now())
		r.add("", speakerOf(i), fmt.Sprintf("at step %d", i))
	}
	got := r.read("", "")
	if len(got) != 5 {
		t.Fatalf("read %d utterances", len(got))
	}
	for i := range got {
		if !got[i].Timestamp.Equal(want[i]) {
			t.Errorf("utterance %d: timestamp %v, want the clock's %v", i, got[i].Timestamp, want[i])
		}
		if i > 0 && got[i].Timestamp.Before(got[i-1].Timestamp) {
			t.Errorf("timestamps not ascending at %d: %v < %v", i, got[i].Timestamp, got[i-1].Timestamp)
		}
	}
}

// hasTerm reports whether s contains word as written or a word with the same
// search term (its stem): what search guarantees of each result.
func hasTerm(s, word string) bool {
	if strings.Contains(strings.ToLower(s), strings.ToLower(word)) {
		return true
	}
	for _, w := range text.Words(s) {
		if text.Term(w) == text.Term(word) {
			return true
		}
	}
	return false
}

func TestHistory_7_11_SearchByContent(t *testing.T) {
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 4}) // most of it evicted: search covers the archive
	lines := []string{
		"We deployed the billing service to production on Monday.",
		"The weather in Lisbon is lovely this week.",
		"Deploying the search index takes about 20 minutes.",
		"Can you order pizza for the team?",
		"The deploy failed because of a missing deploy key; deploy again after fixing it.",
		"Maria reviewed the pull request.",
		"Let's schedule the next deployment for Friday.",
		"Nothing to do with it at all.",
	}
	for i, s := range lines {
		r.add("", speakerOf(i), s)
	}
	var got struct {
		Results []utt `json:"results"`
	}
	if u := r.query("Search for deploy", nil, &got); u != "history.search" {
		t.Fatalf("understood %q", u)
	}
	if len(got.Results) != 4 {
		t.Errorf("search deploy found %d results %q, want the 4 about deploying", len(got.Results), texts(got.Results))
	}
	for i, h := range got.Results {
		if !hasTerm(h.Text, "deploy") {
			t.Errorf("result %q does not contain deploy", h.Text)
		}
		if i > 0 && h.RelevanceScore > got.Results[i-1].RelevanceScore {
			t.Errorf("scores not descending: %v after %v", h.RelevanceScore, got.Results[i-1].RelevanceScore)
		}
	}
	if len(got.Results) > 0 && got.Results[0].UtteranceIndex != 4 {
		t.Errorf("best hit %q, want the one saying deploy three times", got.Results[0].Text)
	}
	// Evicted utterances are found and say so.
	for _, h := range got.Results {
		if wantEvicted := h.UtteranceIndex < 4; h.Evicted != wantEvicted {
			t.Errorf("result %d: evicted %v, want %v", h.UtteranceIndex, h.Evicted, wantEvicted)
		}
	}
}

func TestHistory_7_12_FilterBySpeaker(t *testing.T) {
	r := newRig(t)
	for i := range 9 {
		r.add("", history.Speakers[i%3], fmt.Sprintf("budget note %d from %s", i, history.Speakers[i%3]))
	}
	check := func(how string, us []utt, n int) {
		t.Helper()
		if len(us) != n {
			t.Errorf("%s: %d results, want %d", how, len(us), n)
		}
		for _, u := range us {
			if u.Speaker != "user" {
				t.Errorf("%s: %q by %s", how, u.Text, u.Speaker)
			}
		}
	}
	check("read", r.read("", "user"), 3)
	check("search", r.search(map[string]any{"query": "budget note", "speaker": "user"}), 3)
	var q struct {
		Utterances []utt `json:"utterances"`
	}
	r.query("Get all utterances", map[string]any{"speaker": "user"}, &q)
	check("query", q.Utterances, 3)
	var qs struct {
		Results []utt `json:"results"`
	}
	r.query("Search for budget", map[string]any{"speaker": "user"}, &qs)
	check("query search", qs.Results, 3)
}

func TestHistory_7_13_InMemoryBackend(t *testing.T) {
	// An engine on disk with the history kept in memory: it works, and not
	// a word of it reaches the disk store.
	r := newRigWith(t, rigOptions{dir: t.TempDir(), historyBackend: history.BackendInMemory})
	r.configure(map[string]any{"buffer_size": 3})
	lines := numbered(5)
	for i, s := range lines {
		r.add("", speakerOf(i), s)
	}
	if got := r.read("", ""); !slices.Equal(texts(got), lines[2:]) {
		t.Errorf("read = %q", texts(got))
	}
	if st := r.stats(""); st.Backend != history.BackendInMemory || st.Size != 3 || len(st.Summary.Covers) != 2 {
		t.Errorf("stats = %+v", st)
	}
	if hits := r.search(map[string]any{"query": "topic1"}); len(hits) != 1 || !hits[0].Evicted {
		t.Errorf("search topic1 = %+v", hits)
	}
	for k := range dump(t, r.e.Env().Store) {
		if strings.HasPrefix(k, storage.PrefixHistory+"utt/") || strings.HasPrefix(k, storage.PrefixHistory+"sum/") ||
			strings.HasPrefix(k, storage.PrefixIndex+"history/") {
			t.Errorf("the durable store holds %s of an in-memory conversation", k)
		}
	}
	// And an engine wholly in memory.
	m := newRig(t)
	for i, s := range lines {
		m.add("", speakerOf(i), s)
	}
	if got := m.read("", ""); !slices.Equal(texts(got), lines) || m.stats("").Backend != history.BackendInMemory {
		t.Errorf("in-memory engine: read %q", texts(got))
	}
}

func TestHistory_7_16_TokenBudget(t *testing.T) {
	r := newRig(t)
	r.configure(map[string]any{"max_tokens": 1000})
	written := 0
	var reasons []string
	for i, s := range richUtterances(60) {
		u := r.add("", speakerOf(i), s+" "+strings.Repeat("More detail follows here. ", i%4))
		written += u.TokenCount
		if st := r.stats(""); st.TotalTokens > 1000 {
			t.Fatalf("after write %d the buffer holds %d tokens, over max_tokens=1000", i, st.TotalTokens)
		} else if st.LastEviction != nil && !slices.Contains(reasons, st.LastEviction.Reason) {
			reasons = append(reasons, st.LastEviction.Reason)
		}
	}
	st := r.stats("")
	if written <= 1000 {
		t.Fatalf("the test wrote only %d tokens", written)
	}
	var sum int
	for _, u := range r.read("", "") {
		sum += u.TokenCount
	}
	if st.TotalTokens > 1000 || st.TotalTokens != sum {
		t.Errorf("total_tokens %d (buffer sums to %d), want <= 1000 and equal", st.TotalTokens, sum)
	}
	if st.EvictedCount == 0 || st.Size+st.EvictedCount != 60 {
		t.Errorf("size %d + evicted %d, want 60 with evictions", st.Size, st.EvictedCount)
	}
	if !slices.Equal(reasons, []string{"max_tokens"}) {
		t.Errorf("eviction reasons %v, want [max_tokens] (the buffer of 50 never filled)", reasons)
	}
}

func TestHistory_7_17_EmptyBuffer(t *testing.T) {
	r := newRig(t)
	if got := r.last("", 5); got == nil || len(got) != 0 {
		t.Errorf("last 5 = %#v, want an empty list", got)
	}
	if got := r.read("", ""); got == nil || len(got) != 0 {
		t.Errorf("read = %#v, want an empty list", got)
	}
	s := r.summary("", 0)
	if s.Text != "" || s.TokenCount != 0 || s.Covers == nil || len(s.Covers) != 0 {
		t.Errorf("summary = %+v, want empty", s)
	}
	// The same through query(), and the raw JSON says [] (not null).
	raw := string(r.do("history.last", `{"n": 5}`, nil))
	if !strings.Contains(raw, `"utterances":[]`) {
		t.Errorf("history.last on nothing = %s", raw)
	}
	var q struct {
		Summary summaryOut `json:"summary"`
	}
	r.query("Get summary", nil, &q)
	if q.Summary.Text != "" {
		t.Errorf("query summary = %+v", q.Summary)
	}
	if hits := r.search(map[string]any{"query": "anything"}); len(hits) != 0 {
		t.Errorf("search on nothing = %+v", hits)
	}
	if st := r.stats(""); st.Exists || st.Size != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestHistory_7_18_SingleUtterance(t *testing.T) {
	r := newRig(t)
	r.add("", "user", "just one")
	if got := r.last("", 1); len(got) != 1 || got[0].Text != "just one" {
		t.Errorf("last 1 = %+v", got)
	}
	if got := r.read("", ""); len(got) != 1 {
		t.Errorf("read = %+v", got)
	}
	var del struct {
		Deleted utt `json:"deleted"`
	}
	r.do("history.delete", map[string]any{"utterance_index": 0}, &del)
	if del.Deleted.Text != "just one" {
		t.Errorf("deleted = %+v", del.Deleted)
	}
	if got := r.read("", ""); len(got) != 0 {
		t.Errorf("after delete read = %+v", got)
	}
	if got := r.last("", 1); len(got) != 0 {
		t.Errorf("after delete last 1 = %+v", got)
	}
	if st := r.stats(""); st.Size != 0 || st.TotalTokens != 0 {
		t.Errorf("after delete stats = %+v", st)
	}
	if hits := r.search(map[string]any{"query": "one"}); len(hits) != 0 {
		t.Errorf("search finds the deleted utterance: %+v", hits)
	}
	r.fail("history.delete", map[string]any{"utterance_index": 0}, errs.NotFound, "no utterance 0")
}

// largeText is about n tokens of varied text: prose, numbers, code, and
// several scripts.
func largeText(n int, seed int) string {
	pieces := []string{
		"The quarterly review covered revenue of $%d,%03d across %d regions. ",
		"Ünïcödé façade naïve café — “quoted” ‘text’ … ",
		"東京で会議があります。参加者は%d人です。",
		"Привет, мир! Встреча в %d:30. ",
		"🚀✨ deploy #%d done 👍🏽 ",
		"func f%d(x int) int { return x*x + %d } // code\n",
		"αβγ δεζ ηθι %d κλμ. ",
		"مرحبا بالعالم %d ",
		"\t\ttabbed\tline %d\r\n",
	}
	var b strings.Builder
	for i := 0; llm.CountTokens(b.String()) < n; i++ {
		for j := 0; j < 50; j++ {
			k := seed + i*50 + j
			p := pieces[k%len(pieces)]
			args := []any{k, k % 1000, k % 17}
			b.WriteString(fmt.Sprintf(p, args[:strings.Count(p, "%d")]...))
		}
	}
	return b.String()
}

func TestHistory_7_19_LargeUtterances(t *testing.T) {
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 2})
	var sent []utt
	for i := range 3 {
		s := largeText(10_000+i*1000, i*7)
		u := r.add("", speakerOf(i), s)
		want := llm.CountTokens(s)
		if want < 10_000 || u.TokenCount != want || u.Text != s {
			t.Fatalf("utterance %d: %d tokens recorded, %d counted, text equal %v", i, u.TokenCount, want, u.Text == s)
		}
		sent = append(sent, u)
	}
	// The buffer (2) and the archive (the first, evicted) both give them back.
	got := r.read("", "")
	if len(got) != 2 {
		t.Fatalf("read %d utterances", len(got))
	}
	for i, u := range got {
		w := sent[i+1]
		if u.Text != w.Text || u.TokenCount != w.TokenCount || llm.CountTokens(u.Text) != w.TokenCount {
			t.Errorf("utterance %d: round trip lost text (%d vs %d bytes) or tokens (%d vs %d)", u.UtteranceIndex, len(u.Text), len(w.Text), u.TokenCount, w.TokenCount)
		}
	}
	hits := r.search(map[string]any{"query": "quarterly review", "limit": 3})
	found := false
	for _, h := range hits {
		if h.UtteranceIndex == 0 {
			found = h.Text == sent[0].Text && h.TokenCount == sent[0].TokenCount && h.Evicted
		}
	}
	if !found {
		t.Errorf("the evicted large utterance was not returned whole by search")
	}
	if s := r.summary("", 0); s.TokenCount > 200 || !slices.Equal(s.Covers, []int{0}) {
		t.Errorf("summary of a 10,000-token utterance: %d tokens, covers %v", s.TokenCount, s.Covers)
	}

	// One larger than max_tokens alone: a BudgetError stating the limit, nothing stored.
	b := newRig(t)
	b.configure(map[string]any{"conversation": "c", "max_tokens": 5000})
	b.write("c", "user", "a small one first")
	b.h.Settle()
	before := dump(t, b.e.Env().Store)
	big := largeText(6000, 3)
	e := b.fail("history.write", map[string]any{"conversation": "c", "speaker": "user", "text": big}, errs.Budget, "max_tokens=5000")
	if !strings.Contains(e.Message, fmt.Sprint(llm.CountTokens(big))) {
		t.Errorf("the message %q does not say how large the utterance is", e.Message)
	}
	sameDump(t, "a write over max_tokens", before, dump(t, b.e.Env().Store))
}
