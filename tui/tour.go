package tui

import (
	"fmt"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/tour"
)

const tourPaneID paneID = "tour"

// tourGuide is the console's side of the tour (tour/): on a store with
// nothing in it, a line over every tab offers it (T loads it); while its
// sample data is there, the same line marks every tab "sample data", and T
// asks whether to remove it. It is not a tab: the root model draws its
// line above the body and routes its answers and events to it.
type tourGuide struct {
	requests
	// on: the console offers the tour at all (Options.OfferTour).
	on bool
	// empty: the store held nothing when the console started, so the
	// tour is offered until it is loaded.
	empty bool
	// loaded: the agent's tour data is there (tour.status, then events).
	loaded  bool
	objects int
	// busy says what is in flight: "" none, "load" or "remove".
	busy    string
	status  loader
	confirm confirm[struct{}]
	key     key.Binding
}

func newTourGuide(c conn.Conn, info conn.Info, on bool) *tourGuide {
	g := &tourGuide{
		requests: requests{conn: c, pane: tourPaneID},
		on:       on,
		empty:    info.Empty,
		confirm:  confirm[struct{}]{Yes: "remove", Danger: true},
		key:      key.NewBinding(key.WithKeys("T"), key.WithHelp("T", "load a short tour")),
	}
	g.setKey()
	return g
}

// init asks whether the tour is loaded (a relaunch with it loaded marks
// every tab again).
func (g *tourGuide) init() tea.Cmd {
	if !g.on {
		return nil
	}
	return request(&g.requests, &g.status, tour.ActionStatus, action.None{})
}

// offering: the line offers the tour, and T loads it.
func (g *tourGuide) offering() bool { return g.on && g.empty && !g.loaded }

// active: T does something now (load or remove).
func (g *tourGuide) active() bool { return g.on && g.busy == "" && (g.offering() || g.loaded) }

// setKey keeps T's help in step with what it does.
func (g *tourGuide) setKey() {
	if g.loaded {
		g.key.SetHelp("T", "remove the sample data")
	} else {
		g.key.SetHelp("T", "load a short tour")
	}
	g.key.SetEnabled(g.active())
}

// press handles T: load the tour, or ask whether to remove it.
func (g *tourGuide) press() tea.Cmd {
	switch {
	case !g.active():
		return nil
	case g.loaded:
		g.confirm.open(fmt.Sprintf("Remove the tour's sample data (%d objects)? Nothing of yours goes.", g.objects), struct{}{})
		return nil
	}
	g.busy = "load"
	g.setKey()
	return request(&g.requests, nil, tour.ActionLoad, action.None{})
}

// confirmKey answers the removal question.
func (g *tourGuide) confirmKey(msg tea.KeyMsg) tea.Cmd {
	if ans, _ := g.confirm.handleKey(msg); ans == answerYes {
		g.busy = "remove"
		g.setKey()
		return request(&g.requests, nil, tour.ActionRemove, action.None{})
	}
	return nil
}

// update takes the guide's answers and the tour's events. show is what the
// Chat tab should open: the tour's conversation once it is loaded, the
// default one once it is removed ("" for no change).
func (g *tourGuide) update(msg tea.Msg) (cmd tea.Cmd, show string) {
	defer g.setKey()
	switch msg := msg.(type) {
	case resultMsg[tour.Status]:
		if msg.req == g.status.req {
			g.status.answer(msg.req)
			if msg.err == nil {
				g.loaded, g.objects = msg.value.Loaded, len(msg.value.Objects)
			}
			return nil, ""
		}
		// tour.load's answer.
		g.busy = ""
		if msg.err != nil {
			return nil, "" // the status line says why
		}
		g.loaded, g.objects = true, len(msg.value.Objects)
		return showStatus(fmt.Sprintf("Tour loaded: %d objects of sample data, marked in every tab. T removes them.", g.objects), false), tour.Conversation
	case resultMsg[tour.RemoveResult]:
		g.busy = ""
		if msg.err != nil {
			return nil, ""
		}
		g.loaded, g.empty = false, false
		text := fmt.Sprintf("Removed the tour's %d objects.", len(msg.value.Removed))
		if n := len(msg.value.Kept); n > 0 {
			text = fmt.Sprintf("Removed %d tour objects; %d threads stay: engram cannot delete threads yet.", len(msg.value.Removed), n)
		}
		return showStatus(text, false), "default"
	case events.Event:
		switch {
		case is(tour.EventLoaded, msg):
			g.loaded = true
			return g.refresh(), ""
		case is(tour.EventRemoved, msg):
			g.loaded = false
			return nil, ""
		}
	}
	return nil, ""
}

func (g *tourGuide) refresh() tea.Cmd {
	return g.requests.refresh(&g.status, func() tea.Cmd {
		return request(&g.requests, &g.status, tour.ActionStatus, action.None{})
	})
}

// line is the guide's line over the body ("" for none).
func (g *tourGuide) line(st *Styles, width int) string {
	if !g.on {
		return ""
	}
	if g.confirm.Active() {
		return g.confirm.View(st, width)
	}
	switch {
	case g.busy == "load":
		return truncateTo(st.Muted.Render(" Loading the tour…"), width)
	case g.busy == "remove":
		return truncateTo(st.Muted.Render(" Removing the tour's sample data…"), width)
	case g.loaded:
		return truncateTo(st.Prompt.Render(" ◆ sample data")+st.Muted.Render(" from the tour, in every tab · T removes it (or :tour.remove)"), width)
	case g.offering():
		return truncateTo(st.Prompt.Render(" New here? T loads a short tour")+st.Muted.Render(": sample data in every tab, T removes it"), width)
	}
	return ""
}

// is says whether ev is of kind k.
func is[T any](k events.Kind[T], ev events.Event) bool {
	_, ok := k.Of(ev)
	return ok
}
