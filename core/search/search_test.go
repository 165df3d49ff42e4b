package search

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/storage"
)

func openStore(t *testing.T) *storage.Store {
	t.Helper()
	s, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	return s
}

type doc struct {
	id   string
	body string
	attr byte
}

// index adds docs to ix and returns the collection's stats.
func index(t *testing.T, s *storage.Store, ix Index, docs []doc) Stats {
	t.Helper()
	var st Stats
	err := s.Update(context.Background(), func(tx *storage.Tx) error {
		for _, d := range docs {
			n, err := ix.Add(tx, d.id, d.body, d.attr)
			if err != nil {
				return err
			}
			if _, want := text.TermCounts(d.body); n != want {
				t.Errorf("Add(%s) returned length %d, want %d", d.id, n, want)
			}
			st.Docs++
			st.TotalLength += n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func scores(t *testing.T, s *storage.Store, ix Index, query string, st Stats, keep func(string, byte) bool) map[string]float64 {
	t.Helper()
	var out map[string]float64
	err := s.View(func(tx *storage.Tx) error {
		var err error
		out, err = ix.Scores(tx, query, st, keep)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func keysUnder(t *testing.T, s *storage.Store, prefix []byte) []string {
	t.Helper()
	var out []string
	err := s.View(func(tx *storage.Tx) error {
		return tx.Keys(storage.Prefix(prefix), func(k []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPostingsRoundTrip: every posting key reads back as the document (ids
// with dots, slashes and percent signs included), its attr, term frequency
// and length; Remove takes every one away.
func TestPostingsRoundTrip(t *testing.T) {
	s := openStore(t)
	ix := Index{Space: "memory/working"}
	docs := []doc{
		{"plain", "the budget review budget", 0},
		{"a.b.c", "budget meeting on Monday", 'u'},
		{"dir/sub/doc.1", "Review the review of reviews", 'd'},
		{"100%/x%2Fy.", "budget", '-'},
		{"", "empty id budget", 'z'},
	}
	st := index(t, s, ix, docs)
	prefix := storage.PrefixKey(storage.PrefixIndex, ix.Space, "t")
	got := map[string]map[string][3]int{} // doc → term → attr, tf, length
	for _, k := range keysUnder(t, s, prefix) {
		parts := storage.SplitKey(storage.PrefixIndex, []byte(k))
		if len(parts) != 4 || parts[0] != ix.Space || parts[1] != "t" {
			t.Fatalf("posting key %q splits into %q", k, parts)
		}
		d, attr, tf, length, err := parsePosting(storage.LastPart([]byte(k)))
		if err != nil {
			t.Fatalf("%q: %v", k, err)
		}
		if got[d] == nil {
			got[d] = map[string][3]int{}
		}
		got[d][parts[2]] = [3]int{int(attr), tf, length}
	}
	want := map[string]map[string][3]int{}
	for _, d := range docs {
		counts, length := text.TermCounts(d.body)
		want[d.id] = map[string][3]int{}
		for term, tf := range counts {
			want[d.id][term] = [3]int{int(attrOrDefault(d.attr)), tf, length}
		}
	}
	if !maps.EqualFunc(got, want, func(a, b map[string][3]int) bool { return maps.Equal(a, b) }) {
		t.Errorf("postings read back as\n%v\nwant\n%v", got, want)
	}
	if sc := scores(t, s, ix, "budget", st, nil); !slices.Equal(slices.Sorted(maps.Keys(sc)), []string{"", "100%/x%2Fy.", "a.b.c", "plain"}) {
		t.Errorf("budget: %v", sc)
	}
	// Remove needs the same text and attr, and leaves nothing behind.
	err := s.Update(context.Background(), func(tx *storage.Tx) error {
		for _, d := range docs {
			n, err := ix.Remove(tx, d.id, d.body, d.attr)
			if err != nil {
				return err
			}
			if _, want := text.TermCounts(d.body); n != want {
				t.Errorf("Remove(%s) returned length %d, want %d", d.id, n, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if left := keysUnder(t, s, storage.PrefixKey(storage.PrefixIndex, ix.Space)); len(left) != 0 {
		t.Errorf("left after Remove: %q", left)
	}
}

// TestSpacesApart: an index sees only its own space's documents, even
// when one space's name is a prefix of another's.
func TestSpacesApart(t *testing.T) {
	s := openStore(t)
	a, b, c := Index{Space: "memory/work"}, Index{Space: "memory/working"}, Index{Space: "memory"}
	sa := index(t, s, a, []doc{{"a1", "shared word", 0}})
	sb := index(t, s, b, []doc{{"b1", "shared word", 0}})
	sc := index(t, s, c, []doc{{"c1", "shared word", 0}})
	for _, x := range []struct {
		ix   Index
		st   Stats
		want string
	}{{a, sa, "a1"}, {b, sb, "b1"}, {c, sc, "c1"}} {
		if got := slices.Collect(maps.Keys(scores(t, s, x.ix, "shared", x.st, nil))); !slices.Equal(got, []string{x.want}) {
			t.Errorf("%s: %v, want [%s]", x.ix.Space, got, x.want)
		}
	}
}

var corpus = []doc{
	{"d1", "The budget review is on Thursday", '-'},
	{"d2", "Budget budget budget: the marketing budget was approved", 'a'},
	{"d3", "Deploying the new release to production", 'b'},
	{"d4", "We deployed release 2.4 after the budget meeting", 'a'},
	{"d5", "Running shoes and a marathon plan", 'b'},
}

// expected is BM25 computed directly from the documents.
func expected(query string, docs []doc, keep func(string, byte) bool) map[string]float64 {
	avg, n := 0.0, len(docs)
	counts := make([]map[string]int, n)
	lengths := make([]int, n)
	for i, d := range docs {
		counts[i], lengths[i] = text.TermCounts(d.body)
		avg += float64(lengths[i])
	}
	avg /= float64(n)
	out := map[string]float64{}
	seen := map[string]bool{}
	for _, term := range text.Terms(query) {
		if seen[term] {
			continue
		}
		seen[term] = true
		df := 0
		for i := range docs {
			if counts[i][term] > 0 {
				df++
			}
		}
		for i, d := range docs {
			if tf := counts[i][term]; tf > 0 && (keep == nil || keep(d.id, attrOrDefault(d.attr))) {
				out[d.id] += text.BM25{}.Score(tf, df, n, float64(lengths[i]), avg)
			}
		}
	}
	return out
}

func near(a, b map[string]float64) bool {
	return maps.EqualFunc(a, b, func(x, y float64) bool { return math.Abs(x-y) < 1e-9 })
}

// TestScores: BM25 over the postings equals BM25 computed directly, with
// stemming, stop words ignored and repeated query terms counted once.
func TestScores(t *testing.T) {
	s := openStore(t)
	ix := Index{Space: "test"}
	st := index(t, s, ix, corpus)
	for _, q := range []string{"budget", "budget review", "deploy", "deployment releases", "run", "marathons",
		"budget budget budget", "the budget of the", "Thursday 2.4", "BUDGET"} {
		got := scores(t, s, ix, q, st, nil)
		want := expected(q, corpus, nil)
		if !near(got, want) {
			t.Errorf("%q: %v, want %v", q, got, want)
		}
		if len(got) == 0 {
			t.Errorf("%q found nothing", q)
		}
	}
	// Stemming: one term for deploying/deployed/deploys.
	if got := slices.Sorted(maps.Keys(scores(t, s, ix, "deploys", st, nil))); !slices.Equal(got, []string{"d3", "d4"}) {
		t.Errorf("deploys: %v", got)
	}
	// More occurrences, shorter: d2 beats d1 for "budget".
	if sc := scores(t, s, ix, "budget", st, nil); !(sc["d2"] > sc["d1"] && sc["d1"] > sc["d4"]) {
		t.Errorf("budget ranking: %v", sc)
	}
	// Only stop words, or nothing: no scores (the caller falls back).
	for _, q := range []string{"the of and", "", "  !?  "} {
		if got := scores(t, s, ix, q, st, nil); len(got) != 0 {
			t.Errorf("%q: %v", q, got)
		}
	}
	// An empty collection scores nothing without failing.
	if got := scores(t, s, Index{Space: "empty"}, "budget", Stats{}, nil); len(got) != 0 {
		t.Errorf("empty: %v", got)
	}
}

// TestScoresKeep: keep filters on id and attr without changing the kept
// documents' scores: df still counts every document with the term.
func TestScoresKeep(t *testing.T) {
	s := openStore(t)
	ix := Index{Space: "test"}
	st := index(t, s, ix, corpus)
	var asked []string
	onlyA := func(id string, attr byte) bool {
		asked = append(asked, id+":"+string(attr))
		return attr == 'a'
	}
	for _, q := range []string{"budget", "release budget", "deploy"} {
		asked = nil
		got := scores(t, s, ix, q, st, onlyA)
		all := scores(t, s, ix, q, st, nil)
		want := expected(q, corpus, onlyA)
		if !near(got, want) {
			t.Errorf("%q kept: %v, want %v", q, got, want)
		}
		for id, sc := range got {
			if math.Abs(sc-all[id]) > 1e-9 {
				t.Errorf("%q: %s scores %v kept, %v unfiltered: df must count every document", q, id, sc, all[id])
			}
		}
	}
	// keep sees each posting's own attr ('-' for 0).
	asked = nil
	scores(t, s, ix, "budget", st, onlyA)
	slices.Sort(asked)
	if want := []string{"d1:-", "d2:a", "d4:a"}; !slices.Equal(asked, want) {
		t.Errorf("keep was asked %v, want %v", asked, want)
	}
	if got := scores(t, s, ix, "budget", st, func(string, byte) bool { return false }); len(got) != 0 {
		t.Errorf("keep nothing: %v", got)
	}
}

func TestParsePosting(t *testing.T) {
	for _, c := range []struct {
		in          string
		doc         string
		attr        byte
		tf, length  int
		shouldError bool
	}{
		{in: "doc.-1.5", doc: "doc", attr: '-', tf: 1, length: 5},
		{in: "a.b.c.u12.345", doc: "a.b.c", attr: 'u', tf: 12, length: 345},
		{in: "dir/x.y.d3.3", doc: "dir/x.y", attr: 'd', tf: 3, length: 3},
		{in: ".-1.1", doc: "", attr: '-', tf: 1, length: 1},
		{in: "doc", shouldError: true},
		{in: "doc.-1", shouldError: true},
		{in: "doc.-.5", shouldError: true},
		{in: "doc.-x.5", shouldError: true},
		{in: "doc.-1.x", shouldError: true},
		{in: "", shouldError: true},
	} {
		doc, attr, tf, length, err := parsePosting(c.in)
		if c.shouldError {
			if err == nil {
				t.Errorf("%q: no error (%q %c %d %d)", c.in, doc, attr, tf, length)
			}
			continue
		}
		if err != nil || doc != c.doc || attr != c.attr || tf != c.tf || length != c.length {
			t.Errorf("%q: %q %c %d %d %v", c.in, doc, attr, tf, length, err)
		}
	}
}

// TestScoresMalformedPosting: a posting that cannot be read is an error,
// not a silent zero.
func TestScoresMalformedPosting(t *testing.T) {
	s := openStore(t)
	ix := Index{Space: "test"}
	err := s.Update(context.Background(), func(tx *storage.Tx) error {
		return tx.Set(storage.Key(storage.PrefixIndex, ix.Space, "t", "budget", "broken"), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(func(tx *storage.Tx) error {
		_, err := ix.Scores(tx, "budget", Stats{Docs: 1, TotalLength: 1}, nil)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "malformed posting") {
		t.Errorf("err = %v", err)
	}
}

// TestWithDFKeepsScoresAsMerged: a list whose document frequency is
// worked out once (WithDF: text and flat field merged, a document in both
// counted once) scores every document as the merge each time did.
func TestWithDFKeepsScoresAsMerged(t *testing.T) {
	l := TermList{
		Postings:   []Posting{{Doc: "a", TF: 1, Length: 3}, {Doc: "b", TF: 2, Length: 5}},
		Weight:     1,
		Flat:       []Posting{{Doc: "b", TF: 1}, {Doc: "c", TF: 1}},
		FlatWeight: 0.7,
	}
	st := Stats{Docs: 10, TotalLength: 40}
	known := l.WithDF()
	if known.DF != 3 {
		t.Fatalf("DF %d; want 3 (a, b, c)", known.DF)
	}
	for _, doc := range []string{"a", "b", "c", "d"} {
		s1, f1 := l.ScoreOf(doc, st)
		s2, f2 := known.ScoreOf(doc, st)
		if s1 != s2 || f1 != f2 {
			t.Errorf("%s: %v, %v with DF known; want %v, %v", doc, s2, f2, s1, f1)
		}
	}
	a, b := ScoreLists([]TermList{l}, st, nil), ScoreLists([]TermList{known}, st, nil)
	if len(a) != len(b) {
		t.Fatalf("ScoreLists %v and %v", a, b)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("ScoreLists %v with DF known; want %v", b[i], a[i])
		}
	}
}
