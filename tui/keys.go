package tui

import (
	"reflect"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
)

// globalKeys work on every tab (unless a text input has the focus, when only
// ctrl+c, esc and the input's own keys do).
type globalKeys struct {
	// Tabs is 1-7 together, for the footer; Tab[i] is the one key of tab i.
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
	digits := make([]string, tabCount)
	for i := range each {
		digits[i] = strconv.Itoa(i + 1)
		each[i] = key.NewBinding(key.WithKeys(digits[i]))
	}
	return globalKeys{
		Tab:       each,
		Tabs:      key.NewBinding(key.WithKeys(digits...), key.WithHelp("1-"+digits[tabCount-1], "tabs")),
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
	// width is the footer's: the one-line footer drops pane keys (past the
	// first) rather than the global ones, so that "1-7 tabs" stays at 80
	// columns. Zero: no limit.
	width int
}

func (h helpKeys) ShortHelp() []key.Binding { return labelled(h.shortHelp()) }

func (h helpKeys) shortHelp() []key.Binding {
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
	// the end when the terminal is narrow (and the tab bar shows 1-7 anyway).
	global := []key.Binding{h.global.Palette, h.global.Help, h.global.Quit, h.global.Tabs}
	n := min(len(h.pane), shortPaneKeys)
	for n > 1 && h.width > 0 && helpWidth(append(append([]key.Binding{}, h.pane[:n]...), global...)) > h.width {
		n--
	}
	return append(append([]key.Binding{}, h.pane[:n]...), global...)
}

// helpWidth is how wide the help bubble draws bs on one line: "key desc"
// each, " • " between.
func helpWidth(bs []key.Binding) int {
	w := 0
	for i, b := range labelled(bs) {
		if i > 0 {
			w += lipgloss.Width(" • ")
		}
		w += lipgloss.Width(b.Help().Key + " " + b.Help().Desc)
	}
	return w
}

func (h helpKeys) FullHelp() [][]key.Binding {
	cols := h.fullHelp()
	for i := range cols {
		cols[i] = labelled(cols[i])
	}
	return cols
}

func (h helpKeys) fullHelp() [][]key.Binding {
	if h.only {
		return [][]key.Binding{h.pane, {h.global.ForceQuit}}
	}
	g := h.global
	// The global keys in one column: beside the longest pane column they
	// still fit 80 columns (the help bubble drops a column that does not).
	cols := [][]key.Binding{
		{g.Tabs, g.NextTab, g.PrevTab, g.Palette, g.Help, g.Quit, g.ForceQuit},
	}
	if h.tour.Enabled() {
		cols[0] = append(cols[0], h.tour)
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

// keyNames are the names a person writes for the keys Bubble Tea names in
// lower case ("ctrl+c" is Ctrl+C, "pgdown" PgDn); arrows, letters and
// signs stay as they are.
var keyNames = map[string]string{
	"ctrl": "Ctrl", "shift": "Shift", "alt": "Alt",
	"esc": "Esc", "enter": "Enter", "tab": "Tab", "backspace": "Backspace", "delete": "Del", "space": "Space",
	"pgup": "PgUp", "pgdn": "PgDn", "pgdown": "PgDn", "home": "Home", "end": "End",
	"up": "↑", "down": "↓", "left": "←", "right": "→",
}

// keyLabel is how help and footers write a key or a few of them: "ctrl+c"
// reads Ctrl+C, "shift+tab" Shift+Tab, "pgup/pgdn" PgUp/PgDn, "n/esc"
// n/Esc. Every footer and the ? help go through it (helpKeys), so that a
// pane's help text may name keys as Bubble Tea does and still read right.
func keyLabel(k string) string {
	alts := strings.Split(k, "/")
	for i, alt := range alts {
		parts := strings.Split(alt, "+")
		for j, p := range parts {
			if name, ok := keyNames[p]; ok {
				parts[j] = name
			} else if j > 0 && len(p) == 1 && parts[j-1] == "Ctrl" {
				parts[j] = strings.ToUpper(p) // ctrl+o reads Ctrl+O
			}
		}
		if i > 0 && len(alt) == 1 && strings.HasPrefix(alts[i-1], "Ctrl+") {
			// "ctrl+n/p" is Ctrl+N/P: the letter shares the Ctrl (a plain
			// letter after a Ctrl key is written first: "c/ctrl+o").
			parts[0] = strings.ToUpper(alt)
		}
		alts[i] = strings.Join(parts, "+")
	}
	return strings.Join(alts, "/")
}

// labelled is bs with every help key written by keyLabel.
func labelled(bs []key.Binding) []key.Binding {
	out := make([]key.Binding, len(bs))
	for i, b := range bs {
		out[i] = withHelp(b, keyLabel(b.Help().Key), b.Help().Desc)
	}
	return out
}

// bindingsOf lists every key.Binding field of keys, a pane's keymap struct
// (arrays of bindings included), in field order: a pane's KeyMap is the
// bindings of its keys struct, so that a key added there is in the KeyMap,
// and so in the tests that hold the ? help and the README to it.
func bindingsOf(keys any) []key.Binding {
	var out []key.Binding
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch {
		case v.Type() == reflect.TypeFor[key.Binding]():
			out = append(out, v.Interface().(key.Binding))
		case v.Kind() == reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case v.Kind() == reflect.Array || v.Kind() == reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(keys))
	return out
}
