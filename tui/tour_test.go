//go:build !noplanning

package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/tour"
)

// startTour runs the console as engram does: offering the tour.
func startTour(t *testing.T, engine conn.Conn, width, height int) *teatest.TestModel {
	t.Helper()
	tm := teatest.NewTestModel(t, New(engine, Options{StatusFade: time.Hour, OfferTour: true}),
		teatest.WithInitialTermSize(width, height))
	t.Cleanup(func() { _ = tm.Quit() })
	return tm
}

func tourStatus(t *testing.T, engine conn.Conn) tour.Status {
	t.Helper()
	st, err := conn.Call(context.Background(), engine, tour.ActionStatus, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// The first launch, on an empty store: the welcome says T loads a tour.
func TestGoldenTourWelcome120x36(t *testing.T) { welcome(t, 120, 36) }

// The same at 80x24.
func TestGoldenTourWelcome80x24(t *testing.T) { welcome(t, 80, 24) }

func welcome(t *testing.T, width, height int) {
	t.Helper()
	engine := newTourEngine(t)
	tm := startTour(t, engine, width, height)
	waitFor(t, tm, "New here?", "No messages in default yet", "conversation not started", "0/50 utterances")
	requireGoldenSized(t, finish(t, tm), width, height)
}

// T loads the tour: the Chat tab opens its conversation, past its buffer,
// and every tab is marked as showing sample data.
func TestTLoadsTheTourAndEveryTabIsMarked(t *testing.T) {
	t.Parallel()
	engine := newTourEngine(t)
	tm := startTour(t, engine, 120, 36)
	waitFor(t, tm, offer)
	tm.Type("T")
	waitFor(t, tm, "◆ sample data", "Chat · tour", "6 evicted", "Tour loaded: 19 objects")
	m := finish(t, tm)
	requireGoldenSized(t, m, 120, 36)
	if st := tourStatus(t, engine); !st.Loaded {
		t.Fatalf("tour.status after T: %+v, want loaded", st)
	}
	for i := range tabCount {
		press(m, fmt.Sprint(int(i)+1))
		if v := m.View(); !strings.Contains(v, "◆ sample data") {
			t.Errorf("tab %d shows no sample-data mark:\n%s", i+1, v)
		}
	}
}

// T again asks first; n keeps the tour, y removes it and the mark goes.
func TestTAsksBeforeRemovingTheTour(t *testing.T) {
	t.Parallel()
	engine := newTourEngine(t)
	tm := startTour(t, engine, 120, 36)
	waitFor(t, tm, offer)
	tm.Type("T")
	waitFor(t, tm, "◆ sample data")
	tm.Type("T")
	waitFor(t, tm, "Remove the tour's sample data (19 objects)?", "y remove")
	tm.Type("n")
	waitFor(t, tm, "◆ sample data")
	if st := tourStatus(t, engine); !st.Loaded {
		t.Fatal("n removed the tour")
	}
	tm.Type("T")
	waitFor(t, tm, "Remove the tour's sample data")
	tm.Type("y")
	waitFor(t, tm, "Removed 17 tour objects; 2 threads stay", "Chat · default")
	m := finish(t, tm)
	if v := m.View(); strings.Contains(v, "sample data") || strings.Contains(v, offer) {
		t.Errorf("after removal the console still marks or offers the tour:\n%s", v)
	}
	if st := tourStatus(t, engine); st.Loaded {
		t.Errorf("tour.status after y: %+v, want not loaded", st)
	}
}

// A store with something in it is not a first launch: no offer, and T
// does nothing.
func TestNoTourOfferOnAStoreWithData(t *testing.T) {
	t.Parallel()
	engine := newTourEngine(t)
	do(t, engine, "cortex.create", "", `{"type": "goal", "fields": {"title": "Mine"}}`)
	tm := startTour(t, engine, 120, 36)
	waitFor(t, tm, "No messages in default yet")
	tm.Type("T")
	tm.Type("3")
	waitFor(t, tm, "[3 Goals]", "Mine")
	m := finish(t, tm)
	if v := m.View(); strings.Contains(v, "tour") {
		t.Errorf("a store with data offers or loads the tour:\n%s", v)
	}
	if st := tourStatus(t, engine); st.Loaded {
		t.Error("T loaded the tour on a store with data")
	}
}

// While typing a message, T is a letter of it.
func TestTypingTIsALetterNotTheTour(t *testing.T) {
	t.Parallel()
	engine := newTourEngine(t)
	tm := startTour(t, engine, 120, 36)
	waitFor(t, tm, offer)
	keys(tm, tea.KeyEnter)
	tm.Type("Tea?")
	waitFor(t, tm, "Tea?")
	m := finish(t, tm)
	if st := tourStatus(t, engine); st.Loaded {
		t.Error("typing T loaded the tour")
	}
	if v := m.View(); !strings.Contains(v, offer) {
		t.Errorf("the offer went while typing:\n%s", v)
	}
}

// On a first launch every tab says what to do there, under the offer
// (TestTLoadsTheTourAndEveryTabIsMarked checks the line on each tab).
func TestEveryEmptyTabSaysWhatToDoThere(t *testing.T) {
	t.Parallel()
	engine := newTourEngine(t)
	tm := startTour(t, engine, 120, 36)
	for i, want := range []string{
		"Press enter and say something",
		"Chatting on the Chat tab starts one",
		"n creates a goal",
		"d decomposes a goal into one",
		"m memorizes one",
		"try :turn.start",
	} {
		tm.Type(fmt.Sprint(i + 1))
		// The frame redraws only the lines that changed: the offer, over
		// every tab, is checked on the last one.
		waitFor(t, tm, fmt.Sprintf("[%d ", i+1), want)
	}
	if v := finish(t, tm).View(); !strings.Contains(v, offer) {
		t.Errorf("the offer is not over the Trace tab:\n%s", v)
	}
}

// Relaunched with the tour's data there, the console marks it again, and
// T offers to remove it.
func TestARelaunchWithTheTourMarksItAgain(t *testing.T) {
	t.Parallel()
	engine := newTourEngine(t)
	do(t, engine, "tour.load", "", "")
	tm := startTour(t, engine, 120, 36)
	waitFor(t, tm, "◆ sample data")
	tm.Type("T")
	waitFor(t, tm, "Remove the tour's sample data (19 objects)?")
	tm.Type("n")
	if v := finish(t, tm).View(); strings.Contains(v, offer) {
		t.Errorf("a store with the tour's data offers the tour again:\n%s", v)
	}
}

// ? lists T with what it does now: load the tour, then remove it.
func TestHelpListsTheTourKey(t *testing.T) {
	t.Parallel()
	engine := newTourEngine(t)
	tm := startTour(t, engine, 120, 36)
	waitFor(t, tm, offer)
	tm.Type("?")
	waitFor(t, tm, "T", "load a short tour")
	tm.Type("?")
	tm.Type("T")
	waitFor(t, tm, "◆ sample data")
	tm.Type("?")
	waitFor(t, tm, "remove the sample data")
	finish(t, tm)
}
