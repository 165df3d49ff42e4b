// Package text is engram's algorithmic language toolkit, shared by every
// subsystem that reads text without a model: search terms (stemmed English
// words), BM25 scoring, key-entity extraction, and an extractive,
// entity-preserving summarizer that works incrementally under a token limit.
package text

import (
	"iter"
	"strings"
	"sync"
	"unicode"

	"github.com/kljensen/snowball/english"
)

// Words splits s into lower-case words: runs of letters and digits
// (apostrophes inside a word are kept, so "don't" is one word).
func Words(s string) []string {
	var out []string
	runes := []rune(s)
	for start, end := range WordSpans(runes) {
		out = append(out, strings.ToLower(string(runes[start:end])))
	}
	return out
}

// WordSpans yields where each word of runes starts and ends (runes[start:end]):
// runs of letters and digits, an apostrophe inside a word kept. Words
// splits by it; a reader that needs more than the lower-case word (its
// capital, what stands between words) walks the spans itself.
func WordSpans(runes []rune) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		start := -1
		for i, r := range runes {
			inWord := unicode.IsLetter(r) || unicode.IsDigit(r) ||
				(r == '\'' || r == '’') && start >= 0 && i+1 < len(runes) && unicode.IsLetter(runes[i+1])
			switch {
			case inWord && start < 0:
				start = i
			case !inWord && start >= 0:
				if !yield(start, i) {
					return
				}
				start = -1
			}
		}
		if start >= 0 {
			yield(start, len(runes))
		}
	}
}

// Terms are the search terms of s: its words without English stop words,
// each reduced to its Snowball (Porter2) stem, so that "deploying",
// "deployed" and "deploys" are one term. Numbers and codes stay as written.
func Terms(s string) []string {
	words := Words(s)
	out := words[:0]
	for _, w := range words {
		if term := Term(w); term != "" {
			out = append(out, term)
		}
	}
	return out
}

// Term is the search term of one word ("" for a stop word).
func Term(word string) string {
	if t, ok := stems.get(word); ok {
		return t
	}
	t := term(word)
	stems.put(word, t)
	return t
}

func term(word string) string {
	word = strings.ToLower(strings.ReplaceAll(word, "’", "'"))
	if english.IsStopWord(word) {
		return ""
	}
	if hasDigit(word) {
		return word
	}
	return english.Stem(word, true)
}

// stems remembers the terms of words seen: stemming is most of the cost of
// indexing an utterance, and conversations repeat their words.
var stems = &termCache{m: map[string]string{}}

type termCache struct {
	mu sync.RWMutex
	m  map[string]string
}

func (c *termCache) get(w string) (string, bool) {
	c.mu.RLock()
	t, ok := c.m[w]
	c.mu.RUnlock()
	return t, ok
}

func (c *termCache) put(w, t string) {
	if len(w) > 40 {
		return
	}
	c.mu.Lock()
	if len(c.m) >= 1<<16 {
		c.m = make(map[string]string, 1<<14)
	}
	c.m[w] = t
	c.mu.Unlock()
}

// TermCounts counts each term of s.
func TermCounts(s string) (counts map[string]int, length int) {
	counts = map[string]int{}
	for _, t := range Terms(s) {
		counts[t]++
		length++
	}
	return counts, length
}

func hasDigit(s string) bool {
	return strings.IndexFunc(s, unicode.IsDigit) >= 0
}
