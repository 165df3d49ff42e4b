package memindex

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"
)

var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

func goalRow(id string, version int, status string, words ...string) Row {
	return Row{ID: id, Version: version, Type: "goal", Status: status, Rank: 2, Created: t0, Readers: []string{"a"}, Owner: "a", Words: words}
}

func ids(x *Index, f Filter) []string {
	got, _ := x.Page(x.Match(f), nil, 1000)
	slices.Sort(got)
	return got
}

// Changes may be applied out of commit order: an older version arriving
// after a newer one changes nothing.
func TestAnOlderVersionNeverReplacesANewerOne(t *testing.T) {
	x := New()
	x.Put(goalRow("g1", 2, "completed", "beta"))
	x.Put(goalRow("g1", 1, "active", "alpha"))
	if got := ids(x, Filter{Reader: "a", Statuses: []string{"active"}}); len(got) != 0 {
		t.Errorf("active items after v1 arrived late: %v", got)
	}
	if got := ids(x, Filter{Reader: "a", WordPrefixes: []string{"alp"}}); len(got) != 0 {
		t.Errorf("v1's word is indexed: %v", got)
	}
	if got := ids(x, Filter{Reader: "a", Statuses: []string{"completed"}, WordPrefixes: []string{"be"}}); !slices.Equal(got, []string{"g1"}) {
		t.Errorf("v2 is not what the index holds: %v", got)
	}
	if x.Version("g1") != 2 {
		t.Errorf("version %d", x.Version("g1"))
	}
}

// A new version takes the place of the old one in every set, however
// large each set has grown (slice and bitmap postings).
func TestAPutReplacesTheOldValuesInEverySet(t *testing.T) {
	x := New()
	for i := range 100 {
		x.Put(goalRow(fmt.Sprintf("g%03d", i), 1, "active", "common", fmt.Sprintf("w%d", i)))
	}
	for i := range 100 {
		if i%2 == 0 {
			x.Put(goalRow(fmt.Sprintf("g%03d", i), 2, "blocked", "other"))
		}
	}
	if n := len(ids(x, Filter{Reader: "a", WordPrefixes: []string{"common"}})); n != 50 {
		t.Errorf("%d items still have the word common, want 50", n)
	}
	if n := len(ids(x, Filter{Reader: "a", Statuses: []string{"blocked"}, WordPrefixes: []string{"oth"}})); n != 50 {
		t.Errorf("%d blocked items with the word other, want 50", n)
	}
	if got := ids(x, Filter{Reader: "a", WordPrefixes: []string{"w2"}}); len(got) != 5 { // w21, w23, …, w29: the odd ones only
		t.Errorf("prefix w2 matches %v", got)
	}
	x.Remove("g001")
	if n := len(ids(x, Filter{Reader: "a"})); n != 99 || x.Len() != 99 {
		t.Errorf("after a remove: %d items, Len %d", n, x.Len())
	}
}

// Word prefixes find words whether they are still among the recent ones
// or already merged into the sorted list.
func TestWordPrefixesFindRecentAndMergedWords(t *testing.T) {
	x := New()
	for i := range 5000 {
		x.Put(goalRow(fmt.Sprintf("g%05d", i), 1, "active", fmt.Sprintf("word%05d", i)))
	}
	if len(x.words.table.recent) == 0 || len(x.words.table.sorted) == 0 {
		t.Fatalf("the test needs both: %d recent, %d merged", len(x.words.table.recent), len(x.words.table.sorted))
	}
	if got := ids(x, Filter{Reader: "a", WordPrefixes: []string{"word0000"}}); len(got) != 10 {
		t.Errorf("word0000 matched %d items, want 10", len(got))
	}
	if got := ids(x, Filter{Reader: "a", WordPrefixes: []string{"word0499"}}); len(got) != 10 {
		t.Errorf("word0499 matched %d items, want 10", len(got))
	}
}

// The checksum is over the ids in id order, also when some ids were added
// out of order (misfits).
func TestChecksumSortsIdsAddedOutOfOrder(t *testing.T) {
	x := New()
	added := []string{"m", "b", "z", "a", "n", "c"}
	for _, id := range added {
		x.Put(goalRow(id, 1, "active"))
	}
	sorted := slices.Clone(added)
	slices.Sort(sorted)
	h := sha256.New()
	for _, id := range sorted {
		h.Write([]byte(id + "\n"))
	}
	if got, want := x.Checksum(x.Match(Filter{Reader: "a"})), hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("checksum %s, want %s", got, want)
	}
}

// Pages follow the active order: priority, due (none last), blocking
// first, oldest first, then id; a position continues strictly after it.
func TestPagesFollowTheActiveOrder(t *testing.T) {
	x := New()
	due := t0.Add(time.Hour)
	rows := []Row{
		{ID: "low", Rank: 3, Created: t0},
		{ID: "nodue", Rank: 1, Created: t0},
		{ID: "due", Rank: 1, Due: &due, Created: t0.Add(time.Minute)},
		{ID: "due-blocking", Rank: 1, Due: &due, Blocking: true, Created: t0.Add(2 * time.Minute)},
		{ID: "critical", Rank: 0, Created: t0.Add(3 * time.Minute)},
		{ID: "nodue-b", Rank: 1, Created: t0},
	}
	for _, r := range rows {
		r.Version, r.Type, r.Status, r.Readers, r.Owner = 1, "goal", "active", []string{"a"}, "a"
		x.Put(r)
	}
	want := []string{"critical", "due-blocking", "due", "nodue", "nodue-b", "low"}
	set := x.Match(Filter{Reader: "a"})
	var got []string
	var after *Position
	for {
		page, more := x.Page(set, after, 2)
		got = append(got, page...)
		if !more {
			break
		}
		last := rows[slices.IndexFunc(rows, func(r Row) bool { return r.ID == page[len(page)-1] })]
		after = &Position{Rank: last.Rank, Due: last.Due, Blocking: last.Blocking, Created: last.Created, ID: last.ID}
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged %v, want %v", got, want)
	}
}

// The checksum hashes runs of loaded ids in one piece (idBlock) and still
// equals the hash of the sorted ids, with ids added after the load in and
// out of order, and some items gone.
func TestChecksumOfALoadedIndexWithLaterIds(t *testing.T) {
	x := New()
	for _, id := range []string{"b1", "b2", "b3", "d1", "d2", "f1"} {
		x.Put(goalRow(id, 1, "active"))
	}
	y := reloaded(t, x)
	for _, id := range []string{"g1", "a0", "c5", "h9", "b25"} { // after f1 in order, then misfits
		y.Put(goalRow(id, 1, "active"))
	}
	y.Put(goalRow("d1", 2, "completed"))
	y.Remove("b2")
	for _, f := range []Filter{{Reader: "a"}, {Reader: "a", Statuses: []string{"active"}}, {Reader: "a", Statuses: []string{"completed"}}} {
		set := y.Match(f)
		var want []string
		for _, o := range set.ToArray() {
			want = append(want, y.id(o))
		}
		slices.Sort(want)
		h := sha256.New()
		for _, id := range want {
			h.Write([]byte(id + "\n"))
		}
		if got := y.Checksum(set); got != hex.EncodeToString(h.Sum(nil)) {
			t.Errorf("%+v: checksum of %v differs", f, want)
		}
	}
}

// Versions past 32 bits (a row keeps 32) are kept exactly: compared,
// reported, saved and loaded.
func TestVersionsPast32BitsAreKeptExactly(t *testing.T) {
	const big = 1<<33 + 5
	x := New()
	x.Put(goalRow("g1", big, "active", "alpha"))
	x.Put(goalRow("g1", big-1, "completed", "beta")) // older: ignored
	if v := x.Version("g1"); v != big {
		t.Fatalf("version %d, want %d", v, big)
	}
	if got := ids(x, Filter{Reader: "a", Statuses: []string{"completed"}}); len(got) != 0 {
		t.Errorf("an older version replaced the newer: %v", got)
	}
	x.Put(goalRow("g2", 1<<32-1, "active")) // the largest 32 bits hold is the marker
	x.Put(goalRow("g3", 3, "active"))
	y := reloaded(t, x)
	for _, ix := range []*Index{x, y} {
		for id, want := range map[string]int{"g1": big, "g2": 1<<32 - 1, "g3": 3} {
			if r, _ := ix.Row(id); ix.Version(id) != want || r.Version != want {
				t.Errorf("%s: version %d, row's %d, want %d", id, ix.Version(id), r.Version, want)
			}
		}
		ix.Put(goalRow("g1", big+1, "completed"))
		if v := ix.Version("g1"); v != big+1 {
			t.Errorf("after an update: version %d", v)
		}
		ix.Remove("g1")
		ix.Put(goalRow("g1", 2, "active"))
		if v := ix.Version("g1"); v != 2 {
			t.Errorf("removed and put again: version %d", v)
		}
	}
}

// An item with tens of thousands of readers or tags (counts and codes of
// several bytes in its run) keeps them all, saved and loaded too, and
// loses them all when it changes.
func TestRowsWithManyReadersAndTagsKeepThemAll(t *testing.T) {
	many := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%05d", prefix, i)
		}
		return out
	}
	x := New()
	wide := goalRow("wide", 1, "active", "alpha")
	wide.Readers = append(many("r", 70_000), "a")
	x.Put(wide)
	tagged := goalRow("tagged", 1, "active", "beta")
	tagged.Tags = many("t", 66_000)
	x.Put(tagged)
	x.Put(goalRow("plain", 1, "active", "gamma"))
	y := reloaded(t, x)
	for name, ix := range map[string]*Index{"built": x, "loaded": y} {
		if r, _ := ix.Row("wide"); len(r.Readers) != 70_001 || !slices.Equal(r.Words, []string{"alpha"}) {
			t.Errorf("%s: wide has %d readers, words %v", name, len(r.Readers), r.Words)
		}
		if r, _ := ix.Row("tagged"); len(r.Tags) != 66_000 || r.Tags[65_999] != "t65999" || !slices.Equal(r.Words, []string{"beta"}) {
			t.Errorf("%s: tagged has %d tags, words %v", name, len(r.Tags), r.Words)
		}
		if got := ids(ix, Filter{Reader: "r69999"}); !slices.Equal(got, []string{"wide"}) {
			t.Errorf("%s: reader r69999 reads %v", name, got)
		}
		if got := ids(ix, Filter{Reader: "a", Tags: []string{"t65999"}}); !slices.Equal(got, []string{"tagged"}) {
			t.Errorf("%s: tag t65999 is on %v", name, got)
		}
		ix.Put(goalRow("wide", 2, "active", "delta"))
		ix.Put(goalRow("tagged", 2, "active", "delta"))
		if got := ids(ix, Filter{Reader: "r69999"}); len(got) != 0 {
			t.Errorf("%s: after the change reader r69999 still reads %v", name, got)
		}
		if got := ids(ix, Filter{Reader: "a", Tags: []string{"t00001"}}); len(got) != 0 {
			t.Errorf("%s: after the change tag t00001 is still on %v", name, got)
		}
		if got := ids(ix, Filter{Reader: "a", WordPrefixes: []string{"delta"}}); !slices.Equal(got, []string{"tagged", "wide"}) {
			t.Errorf("%s: delta is on %v", name, got)
		}
	}
}

// The readers, tags and words of rows share one arena a change appends
// to: an engram that changes the same items for long keeps it within
// twice what the rows hold (and 4 KB), and answers as an index built
// afresh does.
func TestManyChangesToTheSameItemsKeepTheCodesArenaBounded(t *testing.T) {
	x := New()
	final := map[string]Row{}
	for round := range 200 {
		for i := range 100 {
			r := goalRow(fmt.Sprintf("g%03d", i), round+1, []string{"active", "blocked"}[(i+round)%2],
				fmt.Sprintf("w%d", round), fmt.Sprintf("v%d", i), "common")
			r.Tags = []string{fmt.Sprintf("t%d", round%7)}
			x.Put(r)
			final[r.ID] = r
		}
		if round%50 == 49 {
			x.Remove("g007")
			delete(final, "g007")
		}
	}
	live := 0
	for _, rw := range x.rows {
		if rw.has(rowPresent) {
			live += int(rw.size)
		}
	}
	if len(x.codes) > 2*live+4096 {
		t.Errorf("the arena holds %d bytes for %d live ones", len(x.codes), live)
	}
	fresh := New()
	for _, r := range final {
		fresh.Put(r)
	}
	sameAnswers(t, x, fresh)
	for id, r := range final {
		got, _ := x.Row(id)
		if !slices.Equal(got.Words, r.Words) || !slices.Equal(got.Tags, r.Tags) {
			t.Errorf("%s: words %v tags %v, want %v %v", id, got.Words, got.Tags, r.Words, r.Tags)
		}
	}
}

// A set of postings holds exactly what was added and not removed since,
// through every form it takes (one ordinal inline, a list, a bitmap) and
// back, and a list freed by one set is reused by another whole.
func TestPostingsHoldWhatWasAddedAndNotRemoved(t *testing.T) {
	d := newDictionary()
	want := map[uint32]map[uint32]bool{}
	for _, name := range []string{"a", "b", "c", "d"} {
		want[d.code(name)] = map[uint32]bool{}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for step := range 20_000 {
		c := uint32(rng.IntN(4))
		// Sets of a few and sets past smallMax: code 3 draws from more.
		o := uint32(rng.IntN([]int{3, 6, 40, 80}[c]))
		if rng.IntN(2) == 0 {
			d.add(c, o)
			want[c][o] = true
		} else {
			d.remove(c, o)
			delete(want[c], o)
		}
		for c, set := range want {
			got := d.bitmap(c).ToArray()
			exp := slices.Sorted(maps.Keys(set))
			if !slices.Equal(got, exp) && !(len(got) == 0 && len(exp) == 0) {
				t.Fatalf("step %d: set %d holds %v, want %v", step, c, got, exp)
			}
		}
	}
	if n := unsafe.Sizeof(postings{}); n != 8 {
		t.Errorf("a postings takes %d bytes", n)
	}
}

// Ids and names added by puts are folded into their blocks as they grow
// (foldAfter): an index that folds often answers as one that never
// does, loaded or built, and takes more changes alike.
func TestFoldedIdsAndNamesAnswerAsAddedOnes(t *testing.T) {
	build := func(after int) *Index {
		old := foldAfter
		foldAfter = after
		defer func() { foldAfter = old }()
		x := randomIndex(3000, 8)
		for i := range 200 { // new ids and words after the first folds
			x.Put(goalRow(fmt.Sprintf("z%04d", i), 1, "active", fmt.Sprintf("late%d", i)))
		}
		return x
	}
	folded, plain := build(3), build(1<<30)
	if len(folded.idEnds) < 3000 || len(folded.addedIDs) == 0 || len(folded.words.ends) < 3000 || len(plain.idEnds)+len(plain.words.ends) != 0 {
		t.Fatalf("the test needs folds and ids and names added since: %d ids folded, %d added; %d names folded; %d plain ones folded",
			len(folded.idEnds), len(folded.addedIDs), len(folded.words.ends), len(plain.idEnds)+len(plain.words.ends))
	}
	sameAnswers(t, folded, plain)
	for o := range plain.rows {
		id := plain.id(uint32(o))
		a, _ := folded.Row(id)
		b, _ := plain.Row(id)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("%s: folded %+v, plain %+v", id, a, b)
		}
	}
	if got := ids(folded, Filter{Reader: "a", WordPrefixes: []string{"late19"}}); !slices.Equal(got, []string{"z0019", "z0190", "z0191", "z0192", "z0193", "z0194", "z0195", "z0196", "z0197", "z0198", "z0199"}) {
		t.Errorf("late19: %v", got)
	}
	loaded := reloaded(t, folded)
	sameAnswers(t, loaded, plain)
}
