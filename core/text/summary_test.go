package text

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// words counts white-space separated words: a stand-in token counter for
// tests that need no real tokenizer (the history's tests use the real one).
func words(s string) int { return len(strings.Fields(s)) }

func TestSplitSentences(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"One. Two! Three? Four", []string{"One.", "Two!", "Three?", "Four"}},
		{"It costs $89.99 each. Fine.", []string{"It costs $89.99 each.", "Fine."}},
		{"Dr. Petrova at St. Mary's. Then home.", []string{"Dr. Petrova at St. Mary's.", "Then home."}},
		{"Ship v2.4.0 and main.go today. J. Smith agrees.", []string{"Ship v2.4.0 and main.go today.", "J. Smith agrees."}},
		{`He said "stop." Then left.`, []string{`He said "stop."`, "Then left."}},
		{"Wait... what?! Really.", []string{"Wait...", "what?!", "Really."}},
		{"line one\nline two", []string{"line one", "line two"}},
		{"e.g. this, i.e. that.", []string{"e.g. this, i.e. that."}},
		{"", nil},
	} {
		if got := splitSentences(c.in); !slices.Equal(got, c.want) {
			t.Errorf("splitSentences(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTelegraphic(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"We decided to go with Kowalski Builders.", "decided go Kowalski Builders."},
		{"Do not book the flight before Friday.", "not book flight before Friday."},
		{"Thanks, that's all for now.", ""},
		{"Should I keep taking my metoprolol?", "keep taking metoprolol?"},
		{"I'll draft it and send it to Marcus Reid for review.", "draft send Marcus Reid review."},
		{"Meet at Time Out Market at 8pm, table for 3.", "Meet Time Out Market 8pm table 3."},
		{"The refund of $89.99 takes 5-7 business days.", "refund $89.99 takes 5-7 business days."},
	} {
		if got := Telegraphic(c.in); got != c.want {
			t.Errorf("Telegraphic(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDedupe(t *testing.T) {
	got := dedupe([]string{"Maria", "Lisbon", "Maria Lopez", "lisbon", "$40", "Acme Corp", "Acme"})
	if want := []string{"Maria Lopez", "lisbon", "$40", "Acme Corp"}; !slices.Equal(got, want) {
		t.Errorf("dedupe = %q, want %q", got, want)
	}
}

func TestSpans(t *testing.T) {
	var s Summary
	for i := range 5 {
		s.Add(Line{Index: i, Speaker: "user", Text: fmt.Sprintf("Maria paid $%d.", i)})
	}
	s.Add(Line{Index: 9, Speaker: "user", Text: "Later, Tom."})
	if got := s.Covers(); !slices.Equal(got, []int{0, 1, 2, 3, 4, 9}) {
		t.Errorf("Covers = %v", got)
	}
	if got := s.Spans(); !slices.Equal(got, []Span{{0, 4}, {9, 9}}) || s.Covered() != 6 {
		t.Errorf("Spans = %v, Covered %d", got, s.Covered())
	}
	s.Compress(8, words) // merges
	if got := s.Covers(); !slices.Equal(got, []int{0, 1, 2, 3, 4, 9}) {
		t.Errorf("after merging, Covers = %v", got)
	}
	if !strings.Contains(s.Render(), "[0-4") {
		t.Errorf("render %q", s.Render())
	}
	b, _ := json.Marshal(s)
	if !strings.Contains(string(b), `"spans":[[0,`) {
		t.Errorf("JSON %s", b)
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back.Spans(), s.Spans()) || back.Render() != s.Render() {
		t.Errorf("JSON round trip: %v %v", err, back.Spans())
	}
	if spanLabel([]Span{{0, 2}, {5, 5}, {7, 9}}) != "0-2,5,7-9" {
		t.Errorf("spanLabel")
	}
}

var conversation = []string{
	"Hi! Maria Lopez here from Acme Corp. We need to book the Lisbon venue for the product launch on March 14th.",
	"Sure, Maria. The budget is $40,000 and Tom Becker will send the contract by Friday.",
	"Great. Please also invite 120 guests from the partner list.",
	"We decided to move the kickoff to 9:30am on Thursday with Jonas Weber.",
	"Thanks, that's all for now.",
	"Aisha Khan will book the Hotel Adlon and email the invoice to finance.",
	"The FCC approval is pending; if it slips past August 25th we delay to October 1st.",
	"Ticket OPS-4021 tracks the $1,200 permit for Oakland.",
}

// TestCompressSteps: compression keeps what it can: all of it when it fits,
// then telegraphic text, then entities, and never more than the limit.
func TestCompressSteps(t *testing.T) {
	var all Summary
	for i, s := range conversation {
		all.Add(Line{Index: i, Speaker: []string{"user", "assistant"}[i%2], Text: s})
	}
	full := all.Render()
	var ents []string
	for _, s := range conversation {
		ents = append(ents, Entities(s)...)
	}
	prev := 1 << 30
	for _, limit := range []int{1000, 120, 90, 70, 50, 30, 10, 3, 1} {
		s := Summary{Parts: slices.Clone(all.Parts)}
		text, n := s.Compress(limit, words)
		if n != words(text) || n > limit {
			t.Errorf("limit %d: %d words (said %d)\n%s", limit, words(text), n, text)
		}
		if n > prev {
			t.Errorf("limit %d gives more (%d) than a larger one (%d)", limit, n, prev)
		}
		prev = n
		cov := Coverage(ents, text)
		t.Logf("limit %4d: %3d words, coverage %.2f", limit, n, cov)
		switch {
		case limit == 1000 && text != full:
			t.Errorf("a summary that fits was compressed:\n%s", text)
		case limit >= 70 && cov < 1:
			t.Errorf("limit %d: entity coverage %.2f; lost from\n%s", limit, cov, text)
		}
	}
}

// TestCompressRecency: when even the entities do not fit, the oldest go
// first, and a later Add starts from the compressed summary.
func TestCompressRecency(t *testing.T) {
	var s Summary
	for i := range 40 {
		s.Add(Line{Index: i, Speaker: "user", Text: fmt.Sprintf("Person%d met Place%d on day %d.", i, i, i+100)})
		text, n := s.Compress(30, words)
		if n > 30 {
			t.Fatalf("after %d: %d words", i, n)
		}
		if !strings.Contains(text, fmt.Sprintf("Person%d", i)) || !strings.Contains(text, fmt.Sprint(i+100)) {
			t.Fatalf("after %d the newest is lost:\n%s", i, text)
		}
	}
	text := s.Render()
	if strings.Contains(text, "Person0,") || strings.Contains(text, "Person1,") {
		t.Errorf("the oldest survived:\n%s", text)
	}
	if got := s.Covered(); got != 40 {
		t.Errorf("covers %d", got)
	}
}

// TestCompressTiny: a limit too small for any part cuts, within it.
func TestCompressTiny(t *testing.T) {
	var s Summary
	s.Add(Line{Index: 0, Speaker: "user", Text: strings.Repeat("Alpha Beta Gamma ", 30)})
	for _, limit := range []int{5, 2, 1} {
		c := Summary{Parts: slices.Clone(s.Parts)}
		text, n := c.Compress(limit, words)
		if n > limit || !utf8.ValidString(text) {
			t.Errorf("limit %d: %q (%d)", limit, text, n)
		}
	}
	var empty Summary
	if text, n := empty.Compress(10, words); text != "" || n != 0 {
		t.Errorf("empty: %q %d", text, n)
	}
}

// TestKeySentences: a long utterance keeps the sentences with entities or
// decisions.
func TestKeySentences(t *testing.T) {
	text := "Well, it was a long day. Maria Lopez called at 3pm. The weather was nice. We decided to cancel the order. Anyway, it happens."
	got := keySentences(text, Entities(text))
	if want := "Maria Lopez called at 3pm. We decided to cancel the order."; got != want {
		t.Errorf("keySentences = %q, want %q", got, want)
	}
	if short := "Just this. And that."; keySentences(short, nil) != short {
		t.Errorf("a short text is kept whole")
	}
}

func BenchmarkCompress(b *testing.B) {
	b.ReportAllocs()
	var s Summary
	for i := 0; i < b.N; i++ {
		c := conversation[i%len(conversation)]
		s.Add(Line{Index: i, Speaker: "user", Text: c})
		s.Compress(200, words)
	}
}

// TestLeadSentence: a part compressed to one sentence keeps the one that
// says most, whole, and never a greeting alone.
func TestLeadSentence(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"What's the budget?", "What's the budget?"},
		{"Shall we look at venues near the river?", "Shall we look at venues near the river?"},
		{"Hi! Maria Lopez here. We need the Lisbon venue by Friday.", "We need the Lisbon venue by Friday."},
		{"Thanks, that's all for now.", ""},
		{"The weather was nice. Should we book it?", "Should we book it?"},
	} {
		if got := LeadSentence(c.in, Entities(c.in)); got != c.want {
			t.Errorf("LeadSentence(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestSummaryReadsAsSentences: at every limit each line of a summary says
// whole sentences (it ends as a sentence ends, and starts with a capital
// or a figure), names keep their case, and no part reads as a telegram
// ("budget?", "look venues near river? (Shall)").
func TestSummaryReadsAsSentences(t *testing.T) {
	lines := []string{
		"Hi, I'm planning Maria's birthday party in Lisbon.",
		"What's the budget?",
		"Shall we look at venues near the river?",
		"The budget is $2,000 and Tom Becker books the boat on Friday.",
		"Thanks, that's all for now.",
	}
	lines = append(lines, conversation...)
	var all Summary
	for i, l := range lines {
		all.Add(Line{Index: i, Speaker: "user", Text: l})
	}
	for _, limit := range []int{1000, 150, 120, 90, 70, 50, 30} {
		s := Summary{Parts: slices.Clone(all.Parts)}
		text, _ := s.Compress(limit, words)
		for _, line := range strings.Split(text, "\n") {
			_, said, ok := strings.Cut(line, ": ")
			if !ok {
				t.Fatalf("limit %d: %q has no speaker", limit, line)
			}
			first, _ := utf8.DecodeRuneInString(said)
			if !strings.ContainsAny(said[len(said)-1:], ".?!") || !(unicode.IsUpper(first) || unicode.IsDigit(first) || strings.ContainsRune("$€£", first)) {
				t.Errorf("limit %d: %q is not a whole sentence", limit, said)
			}
			for _, broken := range []string{"(Shall)", "Shall)", "look venues", ": budget?", "Maria's,", "lisbon", "maria"} {
				if strings.Contains(line, broken) {
					t.Errorf("limit %d: %q reads as a fragment (%q)", limit, line, broken)
				}
			}
		}
	}
}
