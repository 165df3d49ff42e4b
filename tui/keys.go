package tui

import "github.com/charmbracelet/bubbles/key"

// globalKeys work on every tab (unless a text input has the focus, when only
// ctrl+c, esc and the input's own keys do).
type globalKeys struct {
	Tabs      key.Binding
	NextTab   key.Binding
	PrevTab   key.Binding
	Palette   key.Binding
	Help      key.Binding
	Quit      key.Binding
	ForceQuit key.Binding
}

func newGlobalKeys() globalKeys {
	return globalKeys{
		Tabs:      key.NewBinding(key.WithKeys("1", "2", "3", "4", "5", "6"), key.WithHelp("1-6", "tabs")),
		NextTab:   key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next tab")),
		PrevTab:   key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous tab")),
		Palette:   key.NewBinding(key.WithKeys(":"), key.WithHelp(":", "run an action")),
		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "more keys")),
		Quit:      key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQuit: key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit from anywhere")),
	}
}

// shortPaneKeys is how many of a pane's keys the one-line footer shows.
const shortPaneKeys = 3

// helpKeys combines the global keys with the focused pane's for the footer.
type helpKeys struct {
	global globalKeys
	pane   []key.Binding
	full   bool // the palette is open: only its keys apply
}

func (h helpKeys) ShortHelp() []key.Binding {
	if h.full {
		return h.pane
	}
	// The short line keeps the pane's first few keys; ? shows them all.
	pane := h.pane[:min(len(h.pane), shortPaneKeys)]
	return append(append([]key.Binding{}, pane...), h.global.Palette, h.global.Tabs, h.global.Help, h.global.Quit)
}

func (h helpKeys) FullHelp() [][]key.Binding {
	if h.full {
		return [][]key.Binding{h.pane, {h.global.ForceQuit}}
	}
	g := h.global
	return [][]key.Binding{
		h.pane,
		{g.Tabs, g.NextTab, g.PrevTab},
		{g.Palette, g.Help, g.Quit, g.ForceQuit},
	}
}
