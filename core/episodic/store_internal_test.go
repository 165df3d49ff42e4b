package episodic

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/engram-console/engram/storage"
)

// TestLastTurns: the last n live turns of a thread, whichever of its turns
// compaction archived, never a neighbouring thread's.
func TestLastTurns(t *testing.T) {
	st, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	write := func(thread string, numbers ...int) {
		err := st.Update(context.Background(), func(tx *storage.Tx) error {
			for _, n := range numbers {
				if err := tx.SetJSON(turnKey(thread, n), &Turn{ThreadID: thread, Number: n, Text: fmt.Sprintf("%s %d", thread, n)}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	span := func(from, to int) []int {
		var out []int
		for n := from; n <= to; n++ {
			out = append(out, n)
		}
		return out
	}
	// Neighbours on both sides of every thread's prefix.
	write("a", span(1, 30)...)
	write("c", span(1, 30)...)
	write("b1", span(1, 30)...)                          // all live
	write("b2", span(11, 13)...)                         // 1-10 archived
	write("b3", append(span(1, 50), span(56, 60)...)...) // 51-55 archived; 1-50 pending compaction
	write("b4", span(56, 60)...)                         // 1-55 archived
	write("b5", append(span(1, 5), span(26, 30)...)...)  // 6-25 archived
	cases := []struct {
		thread string
		count  int // the thread's turn count
		n      int
		want   []int
	}{
		{"b1", 30, 20, span(11, 30)},
		{"b1", 30, 40, span(1, 30)},
		{"b1", 30, 1, []int{30}},
		{"b2", 13, 20, span(11, 13)},
		{"b3", 60, 20, append(span(36, 50), span(56, 60)...)},
		{"b4", 60, 20, span(56, 60)},
		{"b5", 30, 20, append(span(1, 5), span(26, 30)...)},
		{"b5", 30, 7, append(span(4, 5), span(26, 30)...)},
		{"none", 0, 20, nil},
		{"none", 12, 20, nil}, // every turn archived
	}
	for _, c := range cases {
		var got []*Turn
		err := st.View(func(tx *storage.Tx) error {
			var err error
			got, err = lastTurns(tx, &Thread{ID: c.thread, TurnCount: c.count}, c.n)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var numbers []int
		for _, u := range got {
			if u.ThreadID != c.thread {
				t.Errorf("%s: a turn of %s", c.thread, u.ThreadID)
			}
			numbers = append(numbers, u.Number)
		}
		if !slices.Equal(numbers, c.want) {
			t.Errorf("lastTurns(%s, count %d, %d) = %v, want %v", c.thread, c.count, c.n, numbers, c.want)
		}
	}
}
