package memindex

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"
	"time"
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
