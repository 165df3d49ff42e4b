package llm

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The library splits and merges these white-space pieces right, so its
// answer checks mergeWhiteSpace and the ranks read from the vocabulary.
func TestMergeWhiteSpaceAgreesWithTheLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	blanks := []string{" ", " ", " ", "\t", "\u00a0", "\u3000", "\u2003", "\v", "\f"}
	breaks := []string{"\n", "\n", "\r\n", "\r"}
	for i := range 3000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(blanks[rng.IntN(len(blanks))])
		}
		if i%2 == 0 { // spaces then line breaks: a piece of `\s*[\r\n]+`
			for range 1 + rng.IntN(6) {
				b.WriteString(breaks[rng.IntN(len(breaks))])
			}
		} else if b.Len() == 0 { // spaces alone, at the end of a text: a piece of `\s+(?!\S)`
			b.WriteString(" ")
		}
		piece := b.String()
		_, want, err := bpe().Encode(piece)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(want, "") != piece {
			t.Fatalf("%q: the library's tokens do not concatenate back", piece)
		}
		got := tokens{keep: true}
		mergeWhiteSpace(piece, &got)
		if !reflect.DeepEqual(got.list, want) || got.n != len(want) {
			t.Fatalf("mergeWhiteSpace(%q) = %q, the library's BPE gives %q", piece, got.list, want)
		}
	}
}

// On text whose white space has no line break after a space, tokenize is
// the library, token for token.
func TestTokenizeIsTheLibraryElsewhere(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	parts := []string{"word", "Word", " the", "'s", "'LL", "123456", "!", "?!", ".", "\n", "\n\n", "  ", "\t", " ", "日本", "😀", "é", "e\u0301", "$x", " (", ")\n", "—", "\u00a0"}
	for range 3000 {
		var b strings.Builder
		for range 1 + rng.IntN(20) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		text := b.String()
		if hasSplitBug(text) {
			continue
		}
		got := Tokens(text)
		_, want, _ := bpe().Encode(text)
		if !reflect.DeepEqual(got, want) || CountTokens(text) != len(want) {
			t.Fatalf("tokenize(%q) = %q, the library gives %q", text, got, want)
		}
	}
}

// hasSplitBug reports whether text has a run of white space in which a line
// break follows a space or a tab that itself follows a line break.
func hasSplitBug(text string) bool {
	var sawBreak, sawBlankAfter bool
	for _, r := range text {
		switch {
		case r == '\n' || r == '\r':
			if sawBlankAfter {
				return true
			}
			sawBreak = true
		case unicode.IsSpace(r):
			sawBlankAfter = sawBreak
		default:
			sawBreak, sawBlankAfter = false, false
		}
	}
	return false
}

// Wherever the library splits right (no DEL, no line break after a space in
// a run of white space), tokenize must be the library, token for token.
func FuzzTokenizeMatchesLibrary(f *testing.F) {
	for _, s := range []string{"hello world", "a\n\nb", "  x  ", "!\n?", "日本語 🎉", "x\r\n\r\n  y", "'s 'LL", "123456789"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0x7f) || hasSplitBug(s) {
			t.Skip()
		}
		got := Tokens(s)
		_, want, _ := bpe().Encode(s)
		if !reflect.DeepEqual(got, want) || CountTokens(s) != len(want) {
			t.Fatalf("tokenize(%q) = %q, the library gives %q", s, got, want)
		}
	})
}
