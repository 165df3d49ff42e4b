package memindex

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// modelEntry is what the model holds of an item: its last accepted row,
// and whether it is indexed.
type modelEntry struct {
	r       Row
	present bool
}

// modelMatch is Filter's meaning, item by item.
func modelMatch(m map[string]*modelEntry, f Filter) []Row {
	var out []Row
	anyOf := func(have []string, want []string) bool {
		for _, w := range want {
			if slices.Contains(have, w) {
				return true
			}
		}
		return false
	}
	for _, e := range m {
		r := e.r
		if !e.present || !slices.Contains(r.Readers, f.Reader) || (!f.IncludeDeleted && r.Deleted) {
			continue
		}
		if len(f.Types) > 0 && !slices.Contains(f.Types, r.Type) || len(f.Statuses) > 0 && !slices.Contains(f.Statuses, r.Status) {
			continue
		}
		if len(f.Ranks) > 0 && !slices.Contains(f.Ranks, min(max(r.Rank, 0), 4)) {
			continue
		}
		if len(f.Tags) > 0 && !anyOf(r.Tags, f.Tags) {
			continue
		}
		if f.Owner != "" && r.Owner != f.Owner || f.Org != "" && r.Org != f.Org || f.Parent != "" && r.Parent != f.Parent {
			continue
		}
		ok := true
		for _, p := range f.WordPrefixes {
			if !slices.ContainsFunc(r.Words, func(w string) bool { return strings.HasPrefix(w, p) }) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		if f.DueBefore != nil || f.DueAfter != nil {
			if r.Due == nil || f.DueBefore != nil && !r.Due.Before(*f.DueBefore) || f.DueAfter != nil && r.Due.Before(*f.DueAfter) {
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// modelOrder is the active order, field by field.
func modelOrder(a, b Row) int {
	ra, rb := min(max(a.Rank, 0), 4), min(max(b.Rank, 0), 4)
	if ra != rb {
		return ra - rb
	}
	if (a.Due != nil) != (b.Due != nil) {
		if a.Due != nil {
			return -1
		}
		return 1
	}
	if a.Due != nil {
		if c := a.Due.Compare(*b.Due); c != 0 {
			return c
		}
	}
	if a.Blocking != b.Blocking {
		if a.Blocking {
			return -1
		}
		return 1
	}
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// Many puts (new ids in any order, newer and older versions, versions
// past 32 bits, repeated readers, tags and words), removals and snapshot
// round trips, with ids and names folded at every size: the index
// answers every filter, checksum, page walk and row as a plain model of
// the items does.
func TestManyChangesAndReloadsAnswerAsAModelDoes(t *testing.T) {
	for _, fa := range []int{1, 3, 50, 1 << 30} {
		t.Run(fmt.Sprint(fa), func(t *testing.T) {
			old := foldAfter
			foldAfter = fa
			defer func() { foldAfter = old }()
			rng := rand.New(rand.NewPCG(uint64(fa), 9))
			pick := func(from ...string) string { return from[rng.IntN(len(from))] }
			x := New()
			m := map[string]*modelEntry{}
			var pool []string
			for step := range 6000 {
				switch k := rng.IntN(10); {
				case k < 6 || len(pool) == 0:
					var id string
					if len(pool) == 0 || rng.IntN(3) == 0 {
						id = fmt.Sprintf("%c%05d", 'a'+rune(rng.IntN(26)), rng.IntN(100000))
						pool = append(pool, id)
					} else {
						id = pool[rng.IntN(len(pool))]
					}
					ver := 1 + rng.IntN(6)
					if rng.IntN(50) == 0 {
						ver = 1<<33 + rng.IntN(4)
					}
					r := Row{ID: id, Version: ver, Type: pick("goal", "action"), Status: pick("active", "blocked"), Rank: rng.IntN(7) - 1,
						Blocking: rng.IntN(3) == 0, Created: time.Unix(int64(rng.IntN(100)), int64(rng.IntN(3))), Deleted: rng.IntN(8) == 0,
						Owner: pick("a", "b", ""), Org: pick("", "acme"), Parent: pick("", "p1", "p2")}
					for range rng.IntN(4) {
						r.Readers = append(r.Readers, pick("a", "b", "c"))
					}
					for range rng.IntN(5) {
						r.Tags = append(r.Tags, fmt.Sprintf("t%d", rng.IntN(40)))
					}
					for range rng.IntN(8) {
						r.Words = append(r.Words, fmt.Sprintf("w%d", rng.IntN(300)), fmt.Sprintf("s%d", step))
					}
					if rng.IntN(2) == 0 {
						d := time.Unix(int64(rng.IntN(50)), 0)
						r.Due = &d
					}
					x.Put(r)
					if e := m[id]; e == nil || !e.present || e.r.Version < r.Version {
						m[id] = &modelEntry{r, true}
					}
				case k < 9:
					id := pool[rng.IntN(len(pool))]
					x.Remove(id)
					if e := m[id]; e != nil {
						e.present = false
					}
				default:
					if rng.IntN(20) == 0 {
						x = reloaded(t, x)
					}
				}
				if step%300 != 299 {
					continue
				}
				due := time.Unix(25, 0)
				for _, f := range []Filter{{Reader: "a"}, {Reader: "b", IncludeDeleted: true}, {Reader: "c", Tags: []string{"t1", "t7"}},
					{Reader: "a", WordPrefixes: []string{"w1"}}, {Reader: "a", Ranks: []int{0, 4}}, {Reader: "b", Owner: "a", Org: "acme"},
					{Reader: "a", DueBefore: &due}, {Reader: "b", DueAfter: &due, Parent: "p2"}, {Reader: "c", WordPrefixes: []string{"s1", "w"}}} {
					want := modelMatch(m, f)
					set := x.Match(f)
					if int(set.GetCardinality()) != len(want) {
						t.Fatalf("step %d filter %+v: %d, want %d", step, f, set.GetCardinality(), len(want))
					}
					var wids []string
					for _, r := range want {
						wids = append(wids, r.ID)
					}
					slices.Sort(wids)
					h := sha256.New()
					for _, id := range wids {
						h.Write([]byte(id + "\n"))
					}
					if got := x.Checksum(set); got != hex.EncodeToString(h.Sum(nil)) {
						t.Fatalf("step %d filter %+v: checksum differs", step, f)
					}
					slices.SortFunc(want, modelOrder)
					var all []string
					var after *Position
					for {
						page, more := x.Page(set, after, 7)
						all = append(all, page...)
						if !more || len(page) == 0 {
							break
						}
						r, _ := x.Row(page[len(page)-1])
						after = &Position{Rank: r.Rank, Due: r.Due, Blocking: r.Blocking, Created: r.Created, ID: r.ID}
					}
					var wo []string
					for _, r := range want {
						wo = append(wo, r.ID)
					}
					if !slices.Equal(all, wo) {
						t.Fatalf("step %d filter %+v: pages %v, want %v", step, f, all, wo)
					}
				}
				for id, e := range m {
					got, ok := x.Row(id)
					if ok != e.present {
						t.Fatalf("%s present %v want %v", id, ok, e.present)
					}
					if !ok {
						continue
					}
					w := e.r
					w.Rank = min(max(w.Rank, 0), 4)
					w.Created = w.Created.UTC()
					if w.Due != nil {
						d := w.Due.UTC()
						w.Due = &d
					}
					if fmt.Sprint(got) != fmt.Sprint(w) {
						t.Fatalf("step %d row %s: %+v want %+v", step, id, got, w)
					}
				}
			}
		})
	}
}
