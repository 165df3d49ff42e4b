package text

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// Memo returns a counter that gives the same counts as count, faster on
// text it has seen pieces of: it counts text as the sum of its chunks, cut
// before each single space between two non-space characters, and remembers
// the count of each chunk.
//
// The sum is exact for cl100k_base (llm.CountTokens): its pre-tokenizer
// never puts a space followed by a non-space character into the piece
// before it — " word" and " $5" begin a piece; a letter, digit or
// punctuation run ends before the space — and the encoder works piece by
// piece, so the pieces of the whole are those of the chunks. (Runs of white
// space and line breaks are never cut.) A test holds it to exactness on
// varied text.
func Memo(count Counter) Counter {
	m := &memo{count: count, seen: map[string]int{}}
	return m.tokens
}

type memo struct {
	count Counter
	mu    sync.RWMutex
	seen  map[string]int
}

// memoLimit bounds the memory of a Memo: when it remembers this many
// chunks, it forgets them all and starts again.
const memoLimit = 1 << 16

// memoChunk is the longest chunk remembered (longer ones are counted each
// time: they rarely repeat).
const memoChunk = 64

func (m *memo) tokens(s string) int {
	n := 0
	start := 0
	for i := 1; i < len(s)-1; i++ {
		if s[i] != ' ' || isSpaceByte(s[i+1]) {
			continue
		}
		if r, _ := utf8.DecodeLastRuneInString(s[:i]); unicode.IsSpace(r) {
			continue
		}
		if r, _ := utf8.DecodeRuneInString(s[i+1:]); unicode.IsSpace(r) {
			continue
		}
		n += m.chunk(s[start:i])
		start = i
	}
	return n + m.chunk(s[start:])
}

func isSpaceByte(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

func (m *memo) chunk(c string) int {
	if c == "" {
		return 0
	}
	if len(c) > memoChunk {
		return m.count(c)
	}
	m.mu.RLock()
	n, ok := m.seen[c]
	m.mu.RUnlock()
	if ok {
		return n
	}
	n = m.count(c)
	m.mu.Lock()
	if len(m.seen) >= memoLimit {
		m.seen = make(map[string]int, memoLimit/4)
	}
	m.seen[c] = n
	m.mu.Unlock()
	return n
}
