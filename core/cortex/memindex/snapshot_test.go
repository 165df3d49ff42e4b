package memindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
)

// randomIndex fills an index with n random rows, some ids out of order,
// some replaced by later versions, some removed.
func randomIndex(n int, seed uint64) *Index {
	rng := rand.New(rand.NewPCG(seed, 2))
	x := New()
	pick := func(from ...string) string { return from[rng.IntN(len(from))] }
	for i := range n {
		id := fmt.Sprintf("i%06d", i)
		if rng.IntN(10) == 0 {
			id = fmt.Sprintf("%c%d", 'a'+rune(rng.IntN(26)), i)
		}
		r := Row{ID: id, Version: 1 + rng.IntN(3), Type: pick("goal", "action", "question"), Status: pick("active", "blocked", "completed"),
			Rank: rng.IntN(5), Blocking: rng.IntN(3) == 0, Created: time.Unix(int64(rng.IntN(1e6)), int64(rng.IntN(1e9))),
			Deleted: rng.IntN(9) == 0, Owner: pick("a", "b"), Org: pick("", "acme"), Parent: pick("", "", "p1", "p2"),
			Readers: []string{pick("a", "b")}, Tags: []string{pick("t1", "t2", "t3")}, Words: []string{pick("alpha", "alps", "beta"), fmt.Sprint(i)}}
		if rng.IntN(2) == 0 {
			d := time.Unix(int64(rng.IntN(1e6))-5e5, 0)
			r.Due = &d
		}
		x.Put(r)
		if rng.IntN(20) == 0 {
			x.Remove(id)
		}
	}
	return x
}

// sameAnswers checks that a and b answer a spread of filters alike.
func sameAnswers(t *testing.T, a, b *Index) {
	t.Helper()
	due := time.Unix(100, 0)
	filters := []Filter{
		{Reader: "a"}, {Reader: "b", IncludeDeleted: true}, {Reader: "a", Types: []string{"goal"}, Statuses: []string{"active", "blocked"}},
		{Reader: "a", Ranks: []int{0, 4}, Tags: []string{"t2"}}, {Reader: "b", WordPrefixes: []string{"alp"}}, {Reader: "a", WordPrefixes: []string{"12"}},
		{Reader: "a", Org: "acme", Parent: "p1"}, {Reader: "b", Owner: "a"}, {Reader: "a", DueBefore: &due}, {Reader: "a", DueAfter: &due},
	}
	for _, f := range filters {
		sa, sb := a.Match(f), b.Match(f)
		pa, ma := a.Page(sa, nil, 20)
		pb, mb := b.Page(sb, nil, 20)
		if !sa.Equals(sb) && sa.GetCardinality() != sb.GetCardinality() || a.Checksum(sa) != b.Checksum(sb) || !slices.Equal(pa, pb) || ma != mb ||
			fmt.Sprint(a.CountsByType(sa)) != fmt.Sprint(b.CountsByType(sb)) {
			t.Errorf("filter %+v: %d items %v, loaded %d items %v", f, sa.GetCardinality(), pa, sb.GetCardinality(), pb)
		}
	}
}

// reloaded is x written to a snapshot and read back.
func reloaded(tb testing.TB, x *Index) *Index {
	tb.Helper()
	var buf bytes.Buffer
	if err := x.WriteSnapshot(&buf); err != nil {
		tb.Fatal(err)
	}
	y, err := ReadSnapshot(buf.Bytes())
	if err != nil {
		tb.Fatal(err)
	}
	return y
}

// A snapshot loads into an index that answers every query as the saved
// one does, and keeps taking changes.
func TestASnapshotLoadsIntoAnIndexThatAnswersAlike(t *testing.T) {
	x := randomIndex(3000, 1)
	y := reloaded(t, x)
	if y.Len() != x.Len() {
		t.Fatalf("loaded %d items, saved %d", y.Len(), x.Len())
	}
	sameAnswers(t, x, y)
	for _, ix := range []*Index{x, y} {
		ix.Put(Row{ID: "i000007", Version: 9, Type: "goal", Status: "active", Readers: []string{"a"}, Owner: "a", Words: []string{"alpine"}})
		ix.Put(Row{ID: "0-new", Version: 1, Type: "goal", Status: "active", Readers: []string{"a"}, Owner: "a", Words: []string{"alpaca"}})
	}
	sameAnswers(t, x, y)
}

// A damaged snapshot is refused, never half loaded: every truncation and
// a flipped byte anywhere.
func TestADamagedSnapshotIsRefused(t *testing.T) {
	var buf bytes.Buffer
	if err := randomIndex(200, 3).WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	for cut := 0; cut < len(data); cut += 1 + cut/8 {
		if _, err := ReadSnapshot(data[:cut]); err == nil {
			t.Fatalf("a snapshot cut to %d of %d bytes loaded", cut, len(data))
		}
	}
	for _, at := range []int{0, len(magic), len(data) / 2, len(data) - 1} {
		bad := bytes.Clone(data)
		bad[at] ^= 0x40
		if _, err := ReadSnapshot(bad); err == nil {
			t.Errorf("a snapshot with byte %d changed loaded", at)
		}
	}
}

// FuzzReadSnapshot: no input makes loading panic or hang.
func FuzzReadSnapshot(f *testing.F) {
	var buf bytes.Buffer
	if err := randomIndex(20, 4).WriteSnapshot(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := ReadSnapshot(data)
		if err == nil && x == nil {
			t.Fatal("no index and no error")
		}
	})
}

// BenchmarkReadSnapshot1M: loading the index of a million items (the
// open-time budget is 1 s for the whole open).
func BenchmarkReadSnapshot1M(b *testing.B) {
	x := randomIndex(1_000_000, 5)
	var buf bytes.Buffer
	if err := x.WriteSnapshot(&buf); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(buf.Len())/1e6, "MB")
	b.ResetTimer()
	for b.Loop() {
		if _, err := ReadSnapshot(buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWideQuery1M: a query matching about a third of a million
// items (an agent's open items when it owns most of them): the match, a
// page of 50, counts by type and the checksum of every match.
func BenchmarkWideQuery1M(b *testing.B) {
	// Loaded from a snapshot, as an engine opens it: ordinals in id order.
	var buf bytes.Buffer
	if err := randomIndex(1_000_000, 5).WriteSnapshot(&buf); err != nil {
		b.Fatal(err)
	}
	x, err := ReadSnapshot(buf.Bytes())
	if err != nil {
		b.Fatal(err)
	}
	f := Filter{Reader: "a", Statuses: []string{"active", "blocked"}}
	b.ResetTimer()
	for b.Loop() {
		set := x.Match(f)
		x.Page(set, nil, 50)
		x.CountsByType(set)
		x.Checksum(set)
	}
	b.ReportMetric(float64(x.Match(f).GetCardinality()), "matches")
}

// resealed is data with its checksum made to match again: what a snapshot
// that decodes wrong yet passes the checksum looks like.
func resealed(data []byte) []byte {
	body := data[:len(data)-4]
	return binary.BigEndian.AppendUint32(slices.Clone(body), crc32.Checksum(body, castagnoli))
}

// A snapshot whose checksum matches but whose ids or names break the
// order lookups rely on (an id twice, a name table out of name order) is
// refused: loaded, the same item would sit at two ordinals and a change
// would update one of them only, or a name would not be found.
func TestASnapshotThatBreaksItsOrderIsRefused(t *testing.T) {
	x := New()
	for _, r := range []Row{
		{ID: "a1", Version: 1, Type: "goal", Status: "active", Readers: []string{"r"}, Owner: "o", Tags: []string{"tb"}},
		{ID: "a2", Version: 1, Type: "goal", Status: "active", Readers: []string{"r"}, Owner: "o", Tags: []string{"tc"}},
	} {
		x.Put(r)
	}
	var buf bytes.Buffer
	if err := x.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	for name, c := range map[string]struct{ old, new string }{
		"an id twice":                    {"a1\na2\n", "a1\na1\n"},
		"names out of the table's order": {"tbtc", "tctb"},
	} {
		bad := bytes.Replace(data, []byte(c.old), []byte(c.new), 1)
		if bytes.Equal(bad, data) {
			t.Fatalf("%s: the test's bytes are not in the snapshot", name)
		}
		if y, err := ReadSnapshot(resealed(bad)); err == nil {
			y.Put(Row{ID: "a1", Version: 2, Type: "goal", Status: "completed", Readers: []string{"r"}, Owner: "o"})
			t.Errorf("%s: loaded; then active %v, tb %v", name, ids(y, Filter{Reader: "r", Statuses: []string{"active"}}), ids(y, Filter{Reader: "r", Tags: []string{"tb"}}))
		}
	}
}

// A snapshot that claims far more rows or names than its bytes could
// hold is refused without first allocating room for them all: a file of
// some tens of megabytes must not make the engine ask for gigabytes
// (which Go does not recover from) before decoding shows it is not one.
func TestASnapshotClaimingHugeCountsDoesNotAllocateThem(t *testing.T) {
	const size = 4 << 20
	for name, head := range map[string][]byte{
		"rows":  bytes.Repeat([]byte{0, 0}, 8), // eight empty dictionaries, then the row count
		"names": nil,                           // the first dictionary's name count
	} {
		data := append([]byte(magic), head...)
		data = binary.AppendUvarint(data, size-64)
		data = append(data, make([]byte, size)...)
		data = resealed(append(data, 0, 0, 0, 0))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := ReadSnapshot(data); err == nil {
			t.Fatalf("%s: loaded", name)
		}
		runtime.ReadMemStats(&after)
		// A name's string header is 16 bytes, for a byte of file at least.
		if got := after.TotalAlloc - before.TotalAlloc; got > 20*size {
			t.Errorf("%s: refusing a %d-byte snapshot allocated %d bytes", name, len(data), got)
		}
	}
}

// A snapshot of the first format (testdata/v1.snap, written by that
// version) is refused, not misread: the cortex then builds the index
// from the items.
func TestASnapshotOfTheFirstFormatIsRefused(t *testing.T) {
	data, err := os.ReadFile("testdata/v1.snap")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSnapshot(data); !errors.Is(err, errCorrupt) {
		t.Errorf("a version 1 snapshot: error %v", err)
	}
}
