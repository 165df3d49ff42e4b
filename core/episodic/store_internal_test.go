package episodic

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/storage"
)

// TestLastTurns: a thread's last n turns, live or archived alike, never a
// neighbouring thread's, and none after the time given.
func TestLastTurns(t *testing.T) {
	st, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	}()
	t0 := time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)
	// write stores turns 1..count of thread, those in archived under the
	// archive keys; turn k is at t0 + k minutes.
	write := func(thread string, count int, archived ...int) {
		err := st.Update(context.Background(), func(tx *storage.Tx) error {
			for n := 1; n <= count; n++ {
				key := turnKey(thread, n)
				if slices.Contains(archived, n) {
					key = archKey(thread, n)
				}
				u := &Turn{ThreadID: thread, Number: n, Text: fmt.Sprintf("%s %d", thread, n), At: t0.Add(time.Duration(n) * time.Minute)}
				if err := tx.SetJSON(key, u); err != nil {
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
	write("a", 30)
	write("c", 30)
	write("b1", 30)                  // all live
	write("b2", 13, span(1, 10)...)  // 1-10 archived
	write("b3", 60, span(51, 55)...) // 51-55 archived, 1-50 pending compaction
	write("b4", 60, span(1, 55)...)  // 1-55 archived
	write("b5", 30, span(6, 25)...)  // 6-25 archived
	cases := []struct {
		thread string
		count  int // the thread's turn count
		n      int
		until  time.Duration // after t0; 0: no limit
		want   []int
	}{
		{"b1", 30, 20, 0, span(11, 30)},
		{"b1", 30, 40, 0, span(1, 30)},
		{"b1", 30, 1, 0, []int{30}},
		{"b2", 13, 20, 0, span(1, 13)},
		{"b3", 60, 20, 0, span(41, 60)},
		{"b4", 60, 20, 0, span(41, 60)},
		{"b5", 30, 7, 0, span(24, 30)},
		{"b5", 30, 7, 10 * time.Minute, span(4, 10)},
		{"none", 0, 20, 0, nil},
	}
	for _, c := range cases {
		var got []*Turn
		err := st.View(func(tx *storage.Tx) error {
			var until time.Time
			if c.until > 0 {
				until = t0.Add(c.until)
			}
			var err error
			got, err = lastTurns(tx, &Thread{ID: c.thread, TurnCount: c.count}, c.n, until)
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
			t.Errorf("%s, last %d until +%v: %v; want %v", c.thread, c.n, c.until, numbers, c.want)
		}
	}
}
