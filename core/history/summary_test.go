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

// TestSummaryEvents: an eviction publishes utterance.evicted and
// summary.updated, and leaves a history.evicted trace entry.
func TestSummaryTrace(t *testing.T) {
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
