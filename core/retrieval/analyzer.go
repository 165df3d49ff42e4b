// Package retrieval ranks a collection of conversation turns (or any short
// documents) for a query, offline, and says why each result came where it
// did. It is engram's hybrid lexical ranker: BM25F over fields (speaker,
// text, image caption, tags, linked entities) with a Snowball stemmer and
// stop words, lifted by conversation structure (a hit's neighbouring turns
// and its session), by time expressions in the query ("in May", "last
// summer", "after the move"), and by pseudo-relevance feedback. Fuse
// merges several rankings (say, this one and an embedding one) by
// reciprocal rank fusion.
//
// Nothing here stores anything: an Index is built in memory from Docs and
// searched; a caller that persists postings (history) must reindex when
// the Analyzer changes.
package retrieval

import (
	"strings"
	"unicode"

	"github.com/engram-console/engram/core/text"
	"github.com/kljensen/snowball/english"
)

// Token is one word of a text as the index sees it.
type Token struct {
	// Term is what is indexed and matched: a name's lower case, a
	// number as written, any other word's Snowball stem.
	Term string
	// Name says the word was kept whole as a name.
	Name bool
	// Pos is the word's place among the text's words (stop words
	// included), for phrase-like proximity.
	Pos int
}

// Analyzer turns text into terms: lower case, English stop words left out,
// other words reduced to their Snowball (Porter2) stem, and names kept
// whole. A name is a capitalised word in the middle of a sentence, or a
// capitalised word at the start of one that the Analyzer has learnt is a
// name (Learn): so "Pepper" is "pepper" wherever it stands, "James" stays
// "james" (not the stem "jame"), and "Finished" opening a sentence is
// still "finish".
//
// An Analyzer is not safe for concurrent Learn; Terms and Tokens may run
// concurrently once learning is done.
type Analyzer struct {
	names map[string]bool
	// stems, while an index is built (and only then: Tokens may run
	// concurrently later), remembers each word's stem: stemming is
	// most of the cost of indexing, and conversations repeat words.
	stems map[string]string
}

// NewAnalyzer returns an analyzer that knows the given names (say, the
// speakers of a conversation).
func NewAnalyzer(names ...string) *Analyzer {
	a := &Analyzer{names: map[string]bool{}}
	for _, n := range names {
		a.learnName(n)
	}
	return a
}

// learnName records each capitalised word of a name ("Dr. Amadi": amadi
// and dr): a speaker's name is a name wherever it stands.
func (a *Analyzer) learnName(n string) {
	for _, w := range splitWords(n) {
		if l := lowerWord(w.text); w.capital && l != "" && !isStopWord(l) && !hasDigit(l) {
			a.names[l] = true
		}
	}
}

// Learn records the names of a text: its capitalised words in the middle
// of a sentence. Learn every document before analysing any, so that a
// name opening a sentence is kept whole too.
func (a *Analyzer) Learn(text string) {
	for _, w := range splitWords(text) {
		if w.capital && !w.sentenceStart {
			if l := lowerWord(w.text); !isStopWord(l) && !hasDigit(l) {
				a.names[l] = true
			}
		}
	}
}

// IsName says whether a lower-case word is a name the analyzer knows.
func (a *Analyzer) IsName(lower string) bool { return a.names[lower] }

// Terms are the terms of a text, in order, repeats kept.
func (a *Analyzer) Terms(text string) []string {
	toks := a.Tokens(text)
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = t.Term
	}
	return out
}

// Tokens are the tokens of a text, in order.
func (a *Analyzer) Tokens(text string) []Token {
	var out []Token
	for i, w := range splitWords(text) {
		lower := lowerWord(w.text)
		if lower == "" || isStopWord(lower) {
			continue
		}
		switch {
		case hasDigit(lower):
			out = append(out, Token{Term: lower, Pos: i})
		case w.capital && (!w.sentenceStart || a.names[lower]):
			out = append(out, Token{Term: lower, Name: true, Pos: i})
		default:
			st, ok := a.stems[lower]
			if !ok {
				st = stem(lower)
				if a.stems != nil {
					a.stems[lower] = st
				}
			}
			if st != "" {
				out = append(out, Token{Term: st, Pos: i})
			}
		}
	}
	return out
}

// word is a word of a text and where it stands.
type word struct {
	text          string
	capital       bool
	sentenceStart bool
}

// splitWords splits a text into words: runs of letters and digits, an
// apostrophe inside a word kept ("don't", "Maria's").
func splitWords(s string) []word {
	var out []word
	runes := []rune(s)
	prev := 0 // where the text after the last word starts
	for start, end := range text.WordSpans(runes) {
		// A sentence starts with the text, and after an end mark
		// between two words.
		sentence := len(out) == 0 || endsSentence(runes[prev:start])
		out = append(out, word{text: string(runes[start:end]), capital: unicode.IsUpper(runes[start]), sentenceStart: sentence})
		prev = end
	}
	return out
}

// endsSentence says whether the text between two words ends a sentence
// (an end mark, a line break or an opening quote).
func endsSentence(between []rune) bool {
	for _, r := range between {
		switch r {
		case '.', '!', '?', ':', ';', '\n', '"', '“':
			return true
		}
	}
	return false
}

// lowerWord is a word's lower case without a possessive "'s" and with
// typographic apostrophes made plain.
func lowerWord(w string) string {
	l := strings.ToLower(strings.ReplaceAll(w, "’", "'"))
	return strings.TrimSuffix(strings.TrimSuffix(l, "'s"), "'")
}

// stem is a lower-case word's Snowball stem.
func stem(lower string) string {
	return english.Stem(lower, false)
}

func hasDigit(s string) bool { return strings.IndexFunc(s, unicode.IsDigit) >= 0 }

// isStopWord: Snowball's English stop words, and the contractions and
// auxiliaries of everyday chat that carry no topic.
func isStopWord(w string) bool {
	if english.IsStopWord(w) {
		return true
	}
	switch w {
	case "i'm", "i've", "i'll", "i'd", "it's", "that's", "there's", "don't", "doesn't",
		"didn't", "isn't", "wasn't", "aren't", "can't", "won't", "we're", "they're",
		"you're", "he's", "she's", "let's", "would", "could", "might", "must", "shall",
		"us", "also", "yet", "still", "got", "get", "ok", "okay", "oh", "yes", "yeah":
		return true
	}
	return false
}
