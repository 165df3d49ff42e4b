package llm_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/engram-console/engram/llm"
	"github.com/tiktoken-go/tokenizer/codec"
)

// Token ids from the test suites of OpenAI's tiktoken (tests/test_encoding.py)
// and of tiktoken-go; the texts of the ids come from the vocabulary itself.
var knownEncodings = []struct {
	text string
	ids  []uint
}{
	{"hello world", []uint{15339, 1917}},
	{"hello  world", []uint{15339, 220, 1917}},
	{"hello   world", []uint{15339, 256, 1917}},
	{"supercalifragilistic", []uint{13066, 3035, 278, 333, 4193, 321, 4633}},
	{"We know what we are, but know not what we may be.", []uint{1687, 1440, 1148, 584, 527, 11, 719, 1440, 539, 1148, 584, 1253, 387, 13}},
	{"rer", []uint{38149}},
	{"'rer", []uint{2351, 81}},
	{"today\n ", []uint{31213, 198, 220}},
	{"today\n \n", []uint{31213, 27907}},  // tiktoken-go's own split gets these two wrong
	{"today\n  \n", []uint{31213, 14211}}, // (see tokenize in tokenizer.go)
	{" \u00850", []uint{220, 126, 227, 15}},
	{"👍", []uint{9468, 239, 235}},
}

func TestTokenizerKnownEncodings(t *testing.T) {
	vocab := codec.NewCl100kBase()
	for _, c := range knownEncodings {
		var want []string
		for _, id := range c.ids {
			tok, err := vocab.Decode([]uint{id})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, tok)
		}
		if got := llm.Tokens(c.text); !reflect.DeepEqual(got, want) {
			t.Errorf("Tokens(%q) = %q, want %q (ids %v)", c.text, got, want, c.ids)
		}
		if got := llm.CountTokens(c.text); got != len(c.ids) {
			t.Errorf("CountTokens(%q) = %d, want %d", c.text, got, len(c.ids))
		}
	}
}

func TestCountTokensAgreesWithTheLibrary(t *testing.T) {
	// Texts without white-space runs that have a line break after a space:
	// the library's own Encode is the reference there.
	vocab := codec.NewCl100kBase()
	for _, s := range []string{
		"Hello, world!", "The quick brown fox jumps over the lazy dog.", "indivisibility",
		"日本語のテキスト", "🎉🎉", "<|endoftext|>", "a", "  \n\n", "line one\nline two\n\n  indented",
		"func main() {\n\tfmt.Println(\"hi\")\n}\n", "1234567 + 89 = 1234656", "naïve café — “quotes”",
		"I'm sure they've said it's fine; we'll see what you'd do.", "   leading and trailing   ",
		"tabs\tand\tmore\t\ttabs", "!!!\n\n???", "x\r\ny\r\n",
	} {
		ids, _, err := vocab.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := llm.CountTokens(s); got != len(ids) {
			t.Errorf("CountTokens(%q) = %d, the library says %d", s, got, len(ids))
		}
	}
}

func TestCountTokensEmptyAndStable(t *testing.T) {
	if n := llm.CountTokens(""); n != 0 {
		t.Errorf("CountTokens(\"\") = %d", n)
	}
	if toks := llm.Tokens(""); len(toks) != 0 {
		t.Errorf("Tokens(\"\") = %q", toks)
	}
	text := englishLike(2000, 7)
	first := llm.CountTokens(text)
	for range 3 {
		if n := llm.CountTokens(text); n != first {
			t.Fatalf("CountTokens changed: %d then %d", first, n)
		}
	}
	if n := len(llm.Tokens(text)); n != first {
		t.Errorf("len(Tokens) = %d, CountTokens = %d", n, first)
	}
}

func TestCountTokensConcurrently(t *testing.T) {
	texts := []string{englishLike(500, 1), englishLike(500, 2), "today\n \n \n tomorrow", strings.Repeat("😀 ", 300)}
	want := make([]int, len(texts))
	for i, s := range texts {
		want[i] = llm.CountTokens(s)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for k := range 20 {
				i := (g + k) % len(texts)
				if n := llm.CountTokens(texts[i]); n != want[i] {
					t.Errorf("text %d: %d tokens, want %d", i, n, want[i])
				}
				if toks := llm.Tokens(texts[i]); strings.Join(toks, "") != texts[i] {
					t.Errorf("text %d: tokens do not concatenate back", i)
				}
			}
		})
	}
	wg.Wait()
}

func TestTokensConcatenateBack(t *testing.T) {
	for _, s := range []string{
		englishLike(3000, 3), "mixed: Ελληνικά, русский, 中文, العربية, हिन्दी, 😀👍🏽👨‍👩‍👧, e\u0301",
		"\r\n\r\n \r\n\t\v\f\u00a0\u2028\u3000x", "a \n \n b", "!\n \n?", "0\n \n1", "\n", " ", "\t\n",
	} {
		if got := strings.Join(llm.Tokens(s), ""); got != s {
			t.Errorf("Tokens(%q) concatenate to %q", llm.Truncate(s, 40), llm.Truncate(got, 40))
		}
	}
}

func TestInvalidUTF8ReadsAsReplacement(t *testing.T) {
	s := "ok \xff\xfe bytes \xc3"
	want := "ok \uFFFD\uFFFD bytes \uFFFD" // one U+FFFD per byte
	if got := strings.Join(llm.Tokens(s), ""); got != want {
		t.Errorf("Tokens(%q) concatenate to %q, want %q", s, got, want)
	}
	if llm.CountTokens(s) != llm.CountTokens(want) {
		t.Errorf("a stray byte counts as U+FFFD: %d vs %d", llm.CountTokens(s), llm.CountTokens(want))
	}
	// Cutting such a text stays in bounds and valid.
	for n := range 8 {
		out, _ := llm.TruncateTokens(strings.Repeat("\xff", 40)+"a b c", n)
		if !utf8.ValidString(out) || llm.CountTokens(out) > n {
			t.Errorf("TruncateTokens(…, %d) = %q", n, out)
		}
	}
}

// DEL (U+007F) is a token of its own, and the only token that holds it, so
// every DEL is one token whatever surrounds it. (tiktoken-go's split drops
// it: "a\x7fb" came out as two tokens, "a" and "b".)
func TestDELIsATokenOfItsOwn(t *testing.T) {
	vocab := codec.NewCl100kBase()
	var holders []uint
	for id := uint(0); id < 100256; id++ {
		if tok, err := vocab.Decode([]uint{id}); err == nil && strings.Contains(tok, "\x7f") {
			holders = append(holders, id)
		}
	}
	if !reflect.DeepEqual(holders, []uint{221}) {
		t.Fatalf("tokens holding DEL: %v, want only 221", holders)
	}
	for _, c := range []struct {
		text string
		want []string
	}{
		{"\x7f", []string{"\x7f"}},
		{"a\x7fb", []string{"a", "\x7f", "b"}},
		{"\x7f\x7f", []string{"\x7f", "\x7f"}},
		{"!\x7f!\n", []string{"!", "\x7f", "!\n"}},
		{"word \x7f", []string{"word", " ", "\x7f"}},
		// Before DEL, a run of spaces gives its last one up (`\s+(?!\S)`):
		// "  " would be the single token 256 at the end of a text.
		{"a  \x7f", []string{"a", " ", " ", "\x7f"}},
		{"a \t\x7f", []string{"a", " ", "\t", "\x7f"}},
		{"x\x7f\n \ny", []string{"x", "\x7f", "\n", " \n", "y"}},
	} {
		if got := llm.Tokens(c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Tokens(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestTruncateTokens(t *testing.T) {
	text := englishLike(1000, 11)
	total := llm.CountTokens(text)
	if got, cut := llm.TruncateTokens(text, total); got != text || cut {
		t.Errorf("a text of exactly n tokens was cut")
	}
	if got, cut := llm.TruncateTokens(text, total+50); got != text || cut {
		t.Errorf("a short text was cut")
	}
	for _, n := range []int{1, 2, 7, 100, 512, total - 1} {
		got, cut := llm.TruncateTokens(text, n)
		if !cut || !strings.HasPrefix(text, got) || llm.CountTokens(got) > n {
			t.Errorf("TruncateTokens(text, %d): %d tokens, cut %v, prefix %v", n, llm.CountTokens(got), cut, strings.HasPrefix(text, got))
		}
		if llm.CountTokens(got) < n-1 {
			t.Errorf("TruncateTokens(text, %d) kept only %d tokens", n, llm.CountTokens(got))
		}
	}
	// Never inside a character, though tokens may be: 語 is two tokens,
	// 🎉 three.
	for _, s := range []string{"日本語のテキスト", "🎉🎉🎉", "a 🎉 b", "  🎉", "e\u0301e\u0301"} {
		for n := 1; n < llm.CountTokens(s); n++ {
			got, cut := llm.TruncateTokens(s, n)
			if !cut || !utf8.ValidString(got) || !strings.HasPrefix(s, got) || llm.CountTokens(got) > n {
				t.Errorf("TruncateTokens(%q, %d) = %q", s, n, got)
			}
		}
	}
	if got, _ := llm.TruncateTokens("日本語のテキスト", 3); got != "日本" {
		t.Errorf("TruncateTokens(日本語のテキスト, 3) = %q, want 日本 (the third token is half of 語)", got)
	}
	if got, _ := llm.TruncateTokens("日本語のテキスト", 4); got != "日本語" {
		t.Errorf("TruncateTokens(日本語のテキスト, 4) = %q, want 日本語", got)
	}
	if got, cut := llm.TruncateTokens(text, 0); got != "" || !cut {
		t.Errorf("n=0: (%q, %v)", got, cut)
	}
	if got, cut := llm.TruncateTokens("", 0); got != "" || cut {
		t.Errorf("empty text, n=0: (%q, %v)", got, cut)
	}
	if got, cut := llm.TruncateTokens("hello world", -3); got != "" || !cut {
		t.Errorf("n<0: (%q, %v)", got, cut)
	}
}

func TestTokenizerPathologicalTexts(t *testing.T) {
	// Each of these must simply finish (quickly; no timing is asserted) with
	// tokens that concatenate back.
	for name, s := range map[string]string{
		"10,000+ tokens of prose":     englishLike(12000, 5),
		"200,000 spaces":              strings.Repeat(" ", 200_000),
		"200,000 spaces then a word":  strings.Repeat(" ", 200_000) + "word",
		"100,000 letters":             strings.Repeat("a", 100_000),
		"100,000 digits":              strings.Repeat("7", 100_000),
		"100,000 punctuation":         strings.Repeat("!", 100_000),
		"blank lines with spaces":     strings.Repeat(" \n", 100_000),
		"mixed white space":           strings.Repeat(" \t\r\n\u3000", 20_000),
		"emoji":                       strings.Repeat("😀", 50_000),
		"mixed scripts and emoji":     strings.Repeat("héllo мир 世界 🌍 مرحبا ", 5_000),
		"combining marks":             "a" + strings.Repeat("\u0301", 50_000),
		"one long word of many kinds": strings.Repeat("aé世😀1", 20_000),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			toks := llm.Tokens(s)
			if strings.Join(toks, "") != s {
				t.Error("tokens do not concatenate back")
			}
			if n := llm.CountTokens(s); n != len(toks) || n == 0 {
				t.Errorf("CountTokens %d, %d tokens", n, len(toks))
			}
		})
	}
}

func FuzzTokensRoundTrip(f *testing.F) {
	for _, s := range []string{"hello world", "today\n \n", "\r\n \r\n\t x", "日本語 🎉", "!\n \n?", "", " ", "a\u0085 \n b", englishLike(50, 1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks := llm.Tokens(s)
		want := s // a stray byte reads as U+FFFD
		if !utf8.ValidString(s) {
			var b strings.Builder
			for _, r := range s {
				b.WriteRune(r)
			}
			want = b.String()
		}
		if got := strings.Join(toks, ""); got != want {
			t.Fatalf("Tokens(%q) concatenate to %q", s, got)
		}
		if n := llm.CountTokens(s); n != len(toks) {
			t.Fatalf("CountTokens(%q) = %d, %d tokens", s, n, len(toks))
		}
		for _, tok := range toks {
			if tok == "" {
				t.Fatalf("Tokens(%q) has an empty token", s)
			}
		}
		for _, n := range []int{1, len(toks) / 2, len(toks) - 1} {
			if n < 1 || n >= len(toks) {
				continue
			}
			cut, _ := llm.TruncateTokens(s, n)
			if !strings.HasPrefix(want, cut) || llm.CountTokens(cut) > n || !utf8.ValidString(cut) {
				t.Fatalf("TruncateTokens(%q, %d) = %q", s, n, cut)
			}
		}
	})
}

// englishLike is deterministic, varied, non-repeating English-like text of
// about the given number of words: sentences of common and rarer words,
// names, numbers, punctuation, quotes and paragraphs.
func englishLike(words int, seed uint64) string {
	common := strings.Fields(`the of and to a in is it you that he was for on are with as I his they be at one have
		this from or had by hot word but what some we can out other were all there when up use your how said an each
		she which do their time if will way about many then them write would like so these her long make thing see him
		two has look more day could go come did number sound no most people my over know water than call first who may
		down side been now find any new work part take get place made live where after back little only round man year
		came show every good me give our under name very through just form sentence great think say help low line differ
		turn cause much mean before move right boy old too same tell does set three want air well also play small end put`)
	rare := strings.Fields(`memory episode compaction threshold summarisation retrieval embedding heuristic
		provenance idempotent checkpoint decomposition hierarchical iterative dependency topological scheduler
		Kubernetes PostgreSQL Badger quarterly shareholders photosynthesis archipelago serendipity ubiquitous
		juxtaposition onomatopoeia antidisestablishmentarianism café naïve façade résumé`)
	names := strings.Fields(`Alice Bob Carol Dmitri Eleanor Fatima Grace Hiroshi Isabel Jamal Katarzyna Luis`)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	var b strings.Builder
	sentence := 0
	for w := 0; w < words; {
		n := 4 + rng.IntN(18)
		for i := 0; i < n; i, w = i+1, w+1 {
			var word string
			switch k := rng.IntN(100); {
			case k < 78:
				word = common[rng.IntN(len(common))]
			case k < 90:
				word = rare[rng.IntN(len(rare))]
			case k < 95:
				word = names[rng.IntN(len(names))]
			default:
				word = fmt.Sprint(rng.IntN(100000))
			}
			if i == 0 {
				word = strings.ToUpper(word[:1]) + word[1:]
			} else {
				b.WriteByte(' ')
			}
			if rng.IntN(40) == 0 {
				word = `"` + word + `"`
			}
			b.WriteString(word)
			if i < n-1 && rng.IntN(9) == 0 {
				b.WriteString([]string{",", ",", ";", " —", ":"}[rng.IntN(5)])
			}
		}
		b.WriteString([]string{".", ".", ".", "?", "!", "..."}[rng.IntN(6)])
		sentence++
		if rng.IntN(6) == 0 {
			b.WriteString("\n\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return strings.TrimSpace(b.String())
}

// benchText is 10,000 tokens of englishLike text.
var benchText = sync.OnceValue(func() string {
	text, _ := llm.TruncateTokens(englishLike(12000, 42), 10_000)
	return text
})

func BenchmarkTokenize(b *testing.B) {
	text := benchText()
	n := llm.CountTokens(text)
	if n < 9_990 || n > 10_000 {
		b.Fatalf("the benchmark text is %d tokens", n)
	}
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		if len(llm.Tokens(text)) != n {
			b.Fatal("unstable")
		}
	}
	b.ReportMetric(float64(n), "tokens/op")
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkCountTokens(b *testing.B) {
	text := benchText()
	n := llm.CountTokens(text)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		if llm.CountTokens(text) != n {
			b.Fatal("unstable")
		}
	}
	b.ReportMetric(float64(n), "tokens/op")
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
