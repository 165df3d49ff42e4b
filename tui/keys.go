package tui

import (
	"strconv"

	"github.com/charmbracelet/bubbles/key"
)

// globalKeys work on every tab (unless a text input has the focus, when only
// ctrl+c, esc and the input's own keys do).
type globalKeys struct {
	// Tabs is 1-6 together, for the footer; Tab[i] is the one key of tab i.
	Tabs      key.Binding
	Tab       [tabCount]key.Binding
	NextTab   key.Binding
	PrevTab   key.Binding
	Palette   key.Binding
	Help      key.Binding
	Quit      key.Binding
	ForceQuit key.Binding
}

func newGlobalKeys() globalKeys {
	var each [tabCount]key.Binding
	for i := range each {
		each[i] = key.NewBinding(key.WithKeys(strconv.Itoa(i + 1)))
	}
	return globalKeys{
		Tab:       each,
		Tabs:      key.NewBinding(key.WithKeys("1", "2", "3", "4", "5", "6"), key.WithHelp("1-6", "tabs")),
		NextTab:   key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next tab")),
		PrevTab:   key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous tab")),
		Palette:   key.NewBinding(key.WithKeys(":"), key.WithHelp(":", "run an action")),
		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "more keys")),
		Quit:      key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQuit: key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit from anywhere")),
	}
}

// shortPaneKeys is how many of a pane's keys the one-line footer shows: few
// enough that the global keys (above all "? more keys" and "q quit") still
// fit in 80 columns.
const shortPaneKeys = 2

// helpKeys combines the global keys with the focused pane's for the footer.
type helpKeys struct {
	global globalKeys
	pane   []key.Binding
	// only: the palette is open or a pane's text input has the keyboard, so
	// of the global keys only ctrl+c applies.
	only bool
	// tour is T (load the tour, remove its sample data), when it applies.
	tour key.Binding
}

func (h helpKeys) ShortHelp() []key.Binding {
	if h.only {
		// ctrl+c right after the first keys (enter, esc): it is the only
		// global key left, so it must not be what a narrow footer cuts.
		n := min(len(h.pane), 2)
		keys := append([]key.Binding{}, h.pane[:n]...)
		keys = append(keys, withHelp(h.global.ForceQuit, "ctrl+c", "quit"))
		return append(keys, h.pane[n:]...)
	}
	// The short line keeps the pane's first few keys; ? shows them all. The
	// keys that matter most come first: the help bubble cuts the line from
	// the end when the terminal is narrow (and the tab bar shows 1-6 anyway).
	pane := h.pane[:min(len(h.pane), shortPaneKeys)]
	return append(append([]key.Binding{}, pane...), h.global.Palette, h.global.Help, h.global.Quit, h.global.Tabs)
}

func (h helpKeys) FullHelp() [][]key.Binding {
	if h.only {
		return [][]key.Binding{h.pane, {h.global.ForceQuit}}
	}
	g := h.global
	cols := [][]key.Binding{
		{g.Tabs, g.NextTab, g.PrevTab},
		{g.Palette, g.Help, g.Quit, g.ForceQuit},
	}
	if h.tour.Enabled() {
		cols[1] = append(cols[1], h.tour)
	}
	if len(h.pane) > 0 {
		cols = append([][]key.Binding{h.pane}, cols...)
	}
	return cols
}

// withHelp is b with another help text.
func withHelp(b key.Binding, k, desc string) key.Binding {
	b.SetHelp(k, desc)
	return b
}
