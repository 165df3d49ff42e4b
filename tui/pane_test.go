package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/errs"
)

// recordingPane is a pane that keeps every message it is given.
type recordingPane struct {
	id  paneID
	got []tea.Msg
}

func (r *recordingPane) ID() paneID                 { return r.id }
func (r *recordingPane) Title() string              { return string(r.id) }
func (r *recordingPane) Init() tea.Cmd              { return nil }
func (r *recordingPane) Update(msg tea.Msg) tea.Cmd { r.got = append(r.got, msg); return nil }
func (r *recordingPane) View() string               { return "" }
func (r *recordingPane) SetSize(int, int)           {}
func (r *recordingPane) Focus() tea.Cmd             { return nil }
func (r *recordingPane) Blur()                      {}
func (r *recordingPane) Keys() []key.Binding        { return nil }
func (r *recordingPane) KeyMap() []key.Binding      { return nil }
func (r *recordingPane) Capturing() bool            { return false }
func (r *recordingPane) results() (n int, last any) {
	for _, m := range r.got {
		if a, ok := m.(addressed); ok {
			n, last = n+1, a
		}
	}
	return n, last
}

// TestResultReachesOnlyThePaneThatAsked: an answer goes to the pane whose
// request it answers and to no other (each pane numbers its own requests,
// so another pane could take it for its latest), and a failure also shows
// in the status line.
func TestResultReachesOnlyThePaneThatAsked(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	m := New(engine, Options{})
	asker, other := &recordingPane{id: "asker"}, &recordingPane{id: "other"}
	m.panes[tabChat], m.panes[tabTrace] = asker, other

	m.Update(resultMsg[int]{pane: "asker", req: 1, action: "test.count", value: 7})
	m.Update(resultMsg[int]{pane: "asker", req: 2, action: "test.count", err: errs.New(errs.NotFound, "no such count")})
	if n, last := asker.results(); n != 2 || last.(resultMsg[int]).req != 2 {
		t.Errorf("the asking pane got %d results (last %v), want both", n, last)
	}
	if n, _ := other.results(); n != 0 {
		t.Errorf("another pane got %d results meant for the asker", n)
	}
	if !strings.Contains(m.status.text, "no such count") || !m.status.isError {
		t.Errorf("status %q (error %v): want the failure shown", m.status.text, m.status.isError)
	}
}

// TestLoaderKeepsOnlyTheLatestAnswer: answers to earlier requests are
// stale; a change while the latest was in flight asks for one more load.
func TestLoaderKeepsOnlyTheLatestAnswer(t *testing.T) {
	t.Parallel()
	r := &requests{pane: "p"}
	var l loader
	first := r.next(&l)
	second := r.next(&l)
	if latest, _ := l.answer(first); latest {
		t.Error("the answer to an earlier request was taken as the latest")
	}
	if !l.busy {
		t.Error("a stale answer settled the loader")
	}
	// Something changed while the latest was in flight: refresh waits.
	loads := 0
	load := func() tea.Cmd { loads++; return nil }
	r.refresh(&l, load)
	if loads != 0 || !l.dirty {
		t.Fatalf("refresh while busy loaded %d times (dirty %v): want it owed, not run", loads, l.dirty)
	}
	latest, again := l.answer(second)
	if !latest || !again || l.busy || l.dirty {
		t.Errorf("answer to the latest: latest %v again %v busy %v dirty %v", latest, again, l.busy, l.dirty)
	}
	r.refresh(&l, load)
	if loads != 1 {
		t.Errorf("refresh while idle loaded %d times, want 1", loads)
	}
}
