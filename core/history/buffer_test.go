package history_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/llm"
)

// The buffer: what it keeps, evicts and returns. The tests of seed 001's
// scenarios (7.1–7.19, here and in the other files, each named in its doc
// comment) drive the daemon the way the seed does: through history.query
// where it says query(), and through the history.* actions otherwise.

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

// TestBufferKeepsTheLastN: the buffer keeps the last buffer_size utterances;
// the evicted ones are summarised (seed 001, scenario 7.1).
func TestBufferKeepsTheLastN(t *testing.T) {
	t.Parallel()
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

// TestEvictionIsOldestFirst: each write into a full buffer evicts exactly
// the oldest utterance (seed 001, scenario 7.2).
func TestEvictionIsOldestFirst(t *testing.T) {
	t.Parallel()
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

// TestIndexesAreSequentialAndNeverReused: utterances are indexed 0, 1, 2 …
// in writing order, and a deleted index is not given again (seed 001,
// scenario 7.3).
func TestIndexesAreSequentialAndNeverReused(t *testing.T) {
	t.Parallel()
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

// TestSpeakerIsRecorded: each utterance keeps its speaker (seed 001,
// scenario 7.4).
func TestSpeakerIsRecorded(t *testing.T) {
	t.Parallel()
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

// TestTurnNumberIsTracked: a user utterance starts the next turn, others
// stay in it, and an explicit turn_number is kept (seed 001, scenario 7.5).
func TestTurnNumberIsTracked(t *testing.T) {
	t.Parallel()
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

// TestLastNIsTheMostRecentOldestFirst: last n returns the n most recent
// utterances, oldest first (seed 001, scenario 7.9).
func TestLastNIsTheMostRecentOldestFirst(t *testing.T) {
	t.Parallel()
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

// TestReadIsChronological: reading returns the buffer in the order it was
// written (seed 001, scenario 7.10).
func TestReadIsChronological(t *testing.T) {
	t.Parallel()
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

// TestTokenBudgetEvicts: max_tokens evicts the oldest utterances before the
// buffer fills (seed 001, scenario 7.16).
func TestTokenBudgetEvicts(t *testing.T) {
	t.Parallel()
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

// TestEmptyConversationReadsEmpty: an empty conversation reads as empty
// lists, never null (seed 001, scenario 7.17).
func TestEmptyConversationReadsEmpty(t *testing.T) {
	t.Parallel()
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

// TestSingleUtteranceConversation: a conversation of one utterance reads,
// searches and deletes (seed 001, scenario 7.18).
func TestSingleUtteranceConversation(t *testing.T) {
	t.Parallel()
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

// TestLargeUtterancesAreNeverTruncated: utterances of 10,000 tokens and more
// are kept whole (seed 001, scenario 7.19).
func TestLargeUtterancesAreNeverTruncated(t *testing.T) {
	t.Parallel()
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

// TestDeletingAnEvictedUtteranceKeepsTheSummary: deleting an archived utterance takes it out of search;
// the summary it was folded into keeps what it said.
func TestDeletingAnEvictedUtteranceKeepsTheSummary(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 2})
	r.write("", "user", "Maria Lopez booked the Lisbon flight.")
	r.write("", "user", "second")
	r.write("", "user", "third")
	before := r.stats("")
	r.do("history.delete", map[string]any{"utterance_index": 0}, nil)
	if hits := r.search(map[string]any{"query": "Lisbon"}); len(hits) != 0 {
		t.Errorf("the deleted utterance is still found: %+v", hits)
	}
	after := r.stats("")
	if after.Size != before.Size || after.TotalTokens != before.TotalTokens || after.Archived != before.Archived-1 {
		t.Errorf("stats before %+v after %+v", before, after)
	}
	if s := r.summary("", 0); !strings.Contains(s.Text, "Maria Lopez") {
		t.Errorf("the summary forgot: %q", s.Text)
	}
	// Deleting the oldest buffered one: eviction goes on from the next.
	r.do("history.delete", map[string]any{"utterance_index": 1}, nil)
	r.write("", "user", "fourth")
	r.write("", "user", "fifth")
	if got := r.read("", ""); !slices.Equal(texts(got), []string{"fourth", "fifth"}) {
		t.Errorf("buffer %q", texts(got))
	}
	if st := r.stats(""); st.Size != 2 || st.EvictedCount != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestConfigureSmallerBufferOrBudgetEvictsAtOnce: a smaller buffer or budget evicts at once.
func TestConfigureSmallerBufferOrBudgetEvictsAtOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for i := range 10 {
		r.write("", speakerOf(i), fmt.Sprintf("line %d about topic%d", i, i))
	}
	st := r.configure(map[string]any{"buffer_size": 4})
	if st.Size != 4 || st.EvictedCount != 6 || st.LastEviction == nil || st.LastEviction.Reason != "buffer_size" ||
		!slices.Equal(st.LastEviction.Indexes, []int{0, 1, 2, 3, 4, 5}) {
		t.Errorf("after buffer_size 4: %+v %+v", st, st.LastEviction)
	}
	st = r.configure(map[string]any{"max_tokens": 12})
	if st.TotalTokens > 12 || st.LastEviction.Reason != "max_tokens" || st.MaxTokens != 12 {
		t.Errorf("after max_tokens 12: %+v", st)
	}
	st = r.configure(map[string]any{"summary_token_limit": 10})
	if st.SummaryTokenLimit != 10 || r.summary("", 0).TokenCount > 10 {
		t.Errorf("after summary_token_limit 10: %+v", st)
	}
	// 0 turns the budget off.
	if st = r.configure(map[string]any{"max_tokens": 0}); st.MaxTokens != 0 {
		t.Errorf("max_tokens 0: %+v", st)
	}
}
