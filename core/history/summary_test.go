package history_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/llm"
	"github.com/goccy/go-yaml"
)

// fixture is a conversation of testdata/history.
type fixture struct {
	Name       string   `yaml:"name"`
	Title      string   `yaml:"title"`
	BufferSize int      `yaml:"buffer_size"`
	KeyFacts   []string `yaml:"key_facts"`
	Utterances []struct {
		Speaker string `yaml:"speaker"`
		Text    string `yaml:"text"`
	} `yaml:"utterances"`
}

func loadFixtures(t testing.TB) []fixture {
	t.Helper()
	files, err := filepath.Glob("../../testdata/history/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("want at least 5 conversations in testdata/history, found %d (%v)", len(files), err)
	}
	var out []fixture
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fx fixture
		if err := yaml.UnmarshalWithOptions(b, &fx, yaml.Strict()); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if n := len(fx.Utterances); n < 10 || n > 30 || fx.BufferSize < 1 || len(fx.KeyFacts) < 10 {
			t.Fatalf("%s: %d utterances, buffer %d, %d key facts", f, n, fx.BufferSize, len(fx.KeyFacts))
		}
		out = append(out, fx)
	}
	return out
}

// keeps is the hand-written facts' check, independent of text.Entities and
// text.Coverage: the fact appears in the summary as written (ignoring case
// and spacing, at word boundaries), or — a one-word fact — as a word of the
// same stem ("booked" keeps "book").
func keeps(summary, fact string) bool {
	norm := func(s string) string { return " " + strings.ToLower(strings.Join(strings.Fields(s), " ")) + " " }
	s, f := norm(summary), strings.TrimSpace(norm(fact))
	for i := 0; ; {
		j := strings.Index(s[i:], f)
		if j < 0 {
			break
		}
		j += i
		before, after := s[j-1], s[j+len(f)]
		if !isWordByte(before) || !isWordByte(f[0]) {
			if !isWordByte(after) || !isWordByte(f[len(f)-1]) {
				return true
			}
		}
		i = j + 1
	}
	if !strings.Contains(f, " ") {
		for _, w := range text.Words(summary) {
			if text.Term(w) != "" && text.Term(w) == text.Term(f) {
				return true
			}
		}
	}
	return false
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b >= 0x80
}

func TestKeepsHelper(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		summary, fact string
		want          bool
	}{
		{"Tom will book it", "book", true},
		{"Tom booked it", "book", true},
		{"tomorrow", "Tom", false},
		{"cost $1,850 total", "$1,850", true},
		{"cost $1,8500", "$1,850", false},
		{"at St. Mary's Hospital, Building C", "St. Mary's Hospital", true},
		{"a 10% deposit", "10%", true},
	} {
		if got := keeps(c.summary, c.fact); got != c.want {
			t.Errorf("keeps(%q, %q) = %v", c.summary, c.fact, got)
		}
	}
}

// TestSummaryCoverageOnConversations runs each conversation of
// testdata/history through a small buffer, so that most of it is evicted,
// and checks that the running summary at the default limit (200 tokens)
// keeps at least 80% of the key entities of everything evicted — by
// text.Entities, and by the facts written by hand for each conversation.
func TestSummaryCoverageOnConversations(t *testing.T) {
	t.Parallel()
	for _, fx := range loadFixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			r := newRig(t)
			r.configure(map[string]any{"buffer_size": fx.BufferSize})
			var all []string
			for _, u := range fx.Utterances {
				r.write("", u.Speaker, u.Text)
				all = append(all, u.Text)
				if s := r.summary("", 0); s.TokenCount > 200 {
					t.Fatalf("after %d utterances the summary has %d tokens", len(all), s.TokenCount)
				}
			}
			evicted := all[:len(all)-fx.BufferSize]
			s := r.summary("", 0)
			if len(s.Covers) != len(evicted) || s.TokenCount > 200 || llm.CountTokens(s.Text) != s.TokenCount {
				t.Fatalf("summary covers %d of %d evicted, %d tokens", len(s.Covers), len(evicted), s.TokenCount)
			}
			joined := strings.Join(evicted, "\n")
			for _, f := range fx.KeyFacts {
				if !keeps(joined, f) {
					t.Fatalf("key fact %q is not in the evicted utterances: fix the fixture", f)
				}
			}
			ents := entitiesOf(evicted...)
			auto := text.Coverage(ents, s.Text)
			kept := 0
			var lost []string
			for _, f := range fx.KeyFacts {
				if keeps(s.Text, f) {
					kept++
				} else {
					lost = append(lost, f)
				}
			}
			facts := float64(kept) / float64(len(fx.KeyFacts))
			// What 200 tokens can hold: every entity of the evicted
			// utterances in one list, with room for the line labels.
			listed := llm.CountTokens(strings.Join(ents, ", "))
			t.Logf("%s: %d of %d utterances evicted (%d tokens; their %d entities list in %d), summary %d tokens; entity coverage %.2f, key facts %.2f (%d/%d)",
				fx.Name, len(evicted), len(all), llm.CountTokens(joined), len(ents), listed, s.TokenCount, auto, facts, kept, len(fx.KeyFacts))
			if listed > 180 {
				// More than fits: the newest must be kept (the test below
				// checks the rest of this behaviour).
				last := entitiesOf(evicted[len(evicted)-3:]...)
				if c := text.Coverage(last, s.Text); c < 0.8 {
					t.Errorf("the entities of the last 3 evicted utterances are kept at %.2f; lost %q", c, missing(last, s.Text))
				}
				return
			}
			if auto < 0.8 {
				t.Errorf("entity coverage %.2f < 0.8; lost %q\nsummary:\n%s", auto, missing(ents, s.Text), s.Text)
			}
			if facts < 0.8 {
				t.Errorf("key-fact coverage %.2f < 0.8; lost %q\nsummary:\n%s", facts, lost, s.Text)
			}
			if testing.Verbose() && os.Getenv("SHOW_SUMMARIES") != "" {
				t.Logf("summary:\n%s", s.Text)
			}
		})
	}
}

// TestSummaryLongerThanFits: everything of every conversation in one,
// through a buffer of 3: far more than 200 tokens can hold. The summary
// stays within the limit after every write, always covers everything
// evicted, and what it keeps is the most recent: the entities of the last
// evicted utterances survive, and coverage does not grow with age.
func TestSummaryLongerThanFits(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 3})
	var all []string
	for _, fx := range loadFixtures(t) {
		for _, u := range fx.Utterances {
			r.write("", u.Speaker, u.Text)
			all = append(all, u.Text)
			s := r.summary("", 0)
			if s.TokenCount > 200 {
				t.Fatalf("after %d utterances the summary has %d tokens", len(all), s.TokenCount)
			}
			if n := len(all) - 3; n > 0 && len(s.Covers) != n {
				t.Fatalf("after %d utterances the summary covers %d, want %d", len(all), len(s.Covers), n)
			}
		}
	}
	evicted := all[:len(all)-3]
	s := r.summary("", 0)
	t.Logf("%d utterances evicted (%d tokens) into a summary of %d tokens", len(evicted), llm.CountTokens(strings.Join(evicted, " ")), s.TokenCount)
	if s.TokenCount < 150 {
		t.Errorf("the summary uses only %d of its 200 tokens", s.TokenCount)
	}
	last := text.Coverage(entitiesOf(evicted[len(evicted)-1]), s.Text)
	recent := text.Coverage(entitiesOf(evicted[len(evicted)-5:]...), s.Text)
	if last < 1 || recent < 0.8 {
		t.Errorf("the summary should keep the most recent evicted entities: last utterance %.2f, last 5 %.2f\n%s", last, recent, s.Text)
	}
	// Coverage by age: newest tenth first; it may only fall going back.
	tenth := len(evicted) / 10
	var byAge []float64
	for i := 0; i < 10; i++ {
		hi := len(evicted) - i*tenth
		byAge = append(byAge, text.Coverage(entitiesOf(evicted[hi-tenth:hi]...), s.Text))
	}
	t.Logf("coverage by age, newest tenth first: %.2f", byAge)
	mean := func(xs []float64) float64 {
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		return sum / float64(len(xs))
	}
	if byAge[0] < 0.8 || byAge[1] < 0.8 {
		t.Errorf("the newest tenths are kept at %.2f", byAge[:2])
	}
	if mean(byAge[5:]) >= mean(byAge[:5]) {
		t.Errorf("the older half is kept as well as the newer: %.2f", byAge)
	}
	// A tighter limit at read time keeps the newest too.
	small := r.summary("", 50)
	if small.TokenCount > 50 || text.Coverage(entitiesOf(evicted[len(evicted)-1]), small.Text) < 0.5 {
		t.Errorf("token_limit 50: %d tokens %q", small.TokenCount, small.Text)
	}
}

// TestSummaryFiguresTable logs coverage at several limits (not a check: the
// figures for the record, with -v).
func TestSummaryFiguresTable(t *testing.T) {
	t.Parallel()
	if !testing.Verbose() {
		t.Skip("figures only with -v")
	}
	for _, fx := range loadFixtures(t) {
		r := newRig(t)
		r.configure(map[string]any{"buffer_size": fx.BufferSize})
		var all []string
		for _, u := range fx.Utterances {
			r.write("", u.Speaker, u.Text)
			all = append(all, u.Text)
		}
		ents := entitiesOf(all[:len(all)-fx.BufferSize]...)
		var row []string
		for _, limit := range []int{200, 150, 100, 60} {
			s := r.summary("", limit)
			row = append(row, fmt.Sprintf("%d:%.2f", limit, text.Coverage(ents, s.Text)))
		}
		t.Logf("%-10s %s", fx.Name, strings.Join(row, " "))
	}
}

// TestEvictionLeavesATraceEntry: an eviction leaves a history.evicted
// trace entry saying what left and why, and the summary covers it.
func TestEvictionLeavesATraceEntry(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 1})
	r.write("", "user", "first, Maria")
	r.write("", "user", "second")
	var tr struct {
		Entries []struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"entries"`
	}
	r.do("trace.list", `{"kind": "history.evicted"}`, &tr)
	if len(tr.Entries) != 1 || !strings.Contains(tr.Entries[0].Message, "evicted [0] (buffer_size)") {
		t.Errorf("trace = %+v", tr.Entries)
	}
	if s := r.summary("", 0); !slices.Equal(s.Covers, []int{0}) || !strings.Contains(s.Text, "Maria") {
		t.Errorf("summary = %+v", s)
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

// TestEvictedUtterancesAreSummarized: the summary keeps the key entities of
// what was evicted (seed 001, scenario 7.6).
func TestEvictedUtterancesAreSummarized(t *testing.T) {
	t.Parallel()
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

// TestSummaryStaysWithinItsTokenLimit: the summary stays within
// summary_token_limit and a smaller token_limit when read (seed 001,
// scenario 7.7).
func TestSummaryStaysWithinItsTokenLimit(t *testing.T) {
	t.Parallel()
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

// TestSummaryBuildsIncrementally: each eviction folds into the summary so
// far without losing what it said (seed 001, scenario 7.8).
func TestSummaryBuildsIncrementally(t *testing.T) {
	t.Parallel()
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
