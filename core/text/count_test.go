package text_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/llm"
)

// memoTexts are texts of every kind the history counts: conversation
// lines, summaries as rendered, random mixtures of words, numbers,
// punctuation, white space and scripts.
func memoTexts(t testing.TB) []string {
	var out []string
	files, _ := filepath.Glob("../../testdata/history/*.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
		out = append(out, strings.Split(string(b), "\n")...)
	}
	pieces := []string{"Maria", "the", "$40,000", "€5", "12", "hours", "5-7", "v2.4.0", "main.go", "x()", "OPS-12", "#tag",
		"@who", "https://x.io/a?b=1", "3rd,", "2025", "10am", "9:30", "NASA", "R&D", "30%", "Émile", "Zürich", "東京で会議",
		"Привет", "🚀", "👍🏽", "—", "(", ")", ".", ",", "!", "?", ";", "'s", "'ll", "don't", "I'M", "...", "\"", "“quoted”",
		"\u00a0", "\u2003", "\x7f", "\t", "\r\n", "  ", "αβγ", "مرحبا", "1234567", "0.000001", "[3]", "user:", "earlier:"}
	rng := rand.New(rand.NewPCG(3, 5))
	for range 3000 {
		var b strings.Builder
		for k := 0; k < 1+rng.IntN(40); k++ {
			if k > 0 {
				b.WriteString([]string{" ", " ", " ", "", "\n", "  ", " \n "}[rng.IntN(7)])
			}
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		out = append(out, b.String())
	}
	return out
}

// TestMemoIsExact: the memo's sum of chunks is the tokenizer's count.
func TestMemoIsExact(t *testing.T) {
	t.Parallel() // a Memo of its own over pure functions
	count := text.Memo(llm.CountTokens)
	bad := 0
	for _, round := range []string{"cold", "warm"} {
		for _, s := range memoTexts(t) {
			if got, want := count(s), llm.CountTokens(s); got != want {
				bad++
				if bad < 10 {
					t.Errorf("%s: Memo(%q) = %d, CountTokens %d", round, s, got, want)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d counts differ", bad)
	}
}

func FuzzMemo(f *testing.F) {
	for _, s := range []string{"Maria paid $40,000 on March 3rd.", "a  b\n c", "x \x7fy", "东京 🚀 ok", "'s 'll", " \u00a0 x"} {
		f.Add(s)
	}
	count := text.Memo(llm.CountTokens)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := count(s), llm.CountTokens(s); got != want {
			t.Errorf("Memo(%q) = %d, CountTokens %d", s, got, want)
		}
	})
}

func BenchmarkMemo(b *testing.B) {
	s := strings.Repeat("Maria Lopez will book the Lisbon venue for $40,000 on March 3rd. ", 4)
	b.Run("CountTokens", func(b *testing.B) {
		for range b.N {
			llm.CountTokens(s)
		}
	})
	count := text.Memo(llm.CountTokens)
	b.Run("Memo", func(b *testing.B) {
		for range b.N {
			count(s)
		}
	})
}
