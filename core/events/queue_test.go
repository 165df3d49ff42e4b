package events

import (
	"context"
	"testing"
)

// A slow reader of a queue (in process, or a remote connection's) loses
// only progress events, never a final one, and the newest progress event
// of a burst gets through; a finished queue ends once it is empty.
func TestQueueLosesOnlyProgressEventsAndEndsWhenFinished(t *testing.T) {
	q := NewQueue(4)
	const finals, progressPerFinal = 50, 20
	seq := uint64(0)
	for i := range finals {
		for range progressPerFinal {
			seq++
			q.Push(Event{Seq: seq, Name: "plan.progress", Progress: true})
		}
		seq++
		q.Push(Event{Seq: seq, Name: "plan.finished", Data: i})
	}
	q.Finish()
	var got []Event
	for {
		ev, ok := q.Pop(context.Background())
		if !ok {
			break
		}
		got = append(got, ev)
	}
	gotFinals, gotProgress := 0, 0
	var last uint64
	for _, ev := range got {
		if ev.Seq <= last {
			t.Fatalf("seq %d after %d", ev.Seq, last)
		}
		last = ev.Seq
		if ev.Progress {
			gotProgress++
			continue
		}
		if ev.Data != gotFinals {
			t.Fatalf("final %d carries %v", gotFinals, ev.Data)
		}
		gotFinals++
	}
	if gotFinals != finals || gotProgress != 4 {
		t.Fatalf("kept %d finals and %d progress, want %d and 4", gotFinals, gotProgress, finals)
	}
	// The newest progress event is kept.
	if newest := got[len(got)-2]; !newest.Progress || newest.Seq != seq-1 {
		t.Fatalf("the newest progress event went: %+v", newest)
	}
}
