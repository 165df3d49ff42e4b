package episodic

import (
	"strings"
	"testing"

	"github.com/engram-console/engram/core/text"
)

// TestTopicLexicon: no word stem belongs to two topics (scores would then
// depend on which topic the lexicon was read in first).
func TestTopicLexicon(t *testing.T) {
	owner := map[string]string{}
	for topic, words := range topics {
		for _, w := range strings.Fields(words) {
			stem := text.Term(w)
			if other, ok := owner[stem]; ok && other != topic {
				t.Errorf("%q (stem %q) is in both %s and %s", w, stem, other, topic)
			}
			owner[stem] = topic
		}
	}
}
