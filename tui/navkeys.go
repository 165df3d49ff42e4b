package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// navKeys is the console's one navigation keymap: the keys that move a
// cursor, scroll a section and answer a question, the same on every tab.
// Match them with key.Matches only (never by comparing msg.String()), so
// that a key added here works everywhere at once.
//
// Every raw key string the panes used to compare covers: up k down j pgup
// pgdown home g end G left h right l enter esc backspace tab shift+tab
// shift+up shift+down y Y n N + - and the digits (keyDigit).
type navKeys struct {
	// Up and Down move by one row (or scroll by one line).
	Up, Down key.Binding
	// PageUp and PageDown move by a page (the visible rows).
	PageUp, PageDown key.Binding
	// Home and End go to the first and the last row.
	Home, End key.Binding
	// Left and Right move sideways: between views, stages, stores, choices.
	Left, Right key.Binding
	// Next and Prev cycle the fields of a form or the values of a choice.
	Next, Prev key.Binding
	// SideUp and SideDown scroll a secondary section (the Chat side panel)
	// while the arrows stay with the main one.
	SideUp, SideDown key.Binding
	// Increase and Decrease step a number (how many subtasks run at once).
	Increase, Decrease key.Binding
	// Enter opens, goes into, applies or runs what is selected.
	Enter key.Binding
	// Back leaves a level (a detail for its list); esc or backspace.
	Back key.Binding
	// Esc closes or cancels whatever is open: a question, an input, a box.
	Esc key.Binding
	// Yes answers a question yes (y); No answers it no (n). On a yes/no
	// confirmation No and Esc both cancel (see confirm).
	Yes, No key.Binding

	// Move, Pages and Ends are Up+Down, PageUp+PageDown and Home+End
	// together, for a footer: "↑/↓ move", "pgup/pgdn page", "g/G first/last".
	Move, Pages, Ends key.Binding
}

// newNavKeys builds the keymap with its help texts.
func newNavKeys() navKeys {
	return navKeys{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "page down")),
		Home:     key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "first")),
		End:      key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "last")),
		Left:     key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/h", "left")),
		Right:    key.NewBinding(key.WithKeys("right", "l"), key.WithHelp("→/l", "right")),
		Next:     key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next")),
		Prev:     key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous")),
		SideUp:   key.NewBinding(key.WithKeys("shift+up"), key.WithHelp("shift+↑", "scroll side up")),
		SideDown: key.NewBinding(key.WithKeys("shift+down"), key.WithHelp("shift+↓", "scroll side down")),
		Increase: key.NewBinding(key.WithKeys("+"), key.WithHelp("+", "more")),
		Decrease: key.NewBinding(key.WithKeys("-"), key.WithHelp("-", "fewer")),
		Enter:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
		Back:     key.NewBinding(key.WithKeys("esc", "backspace"), key.WithHelp("esc", "back")),
		Esc:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		Yes:      key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "yes")),
		No:       key.NewBinding(key.WithKeys("n", "N"), key.WithHelp("n", "no")),
		Move:     key.NewBinding(key.WithKeys("up", "k", "down", "j"), key.WithHelp("↑/↓", "move")),
		Pages:    key.NewBinding(key.WithKeys("pgup", "pgdown"), key.WithHelp("pgup/pgdn", "page")),
		Ends:     key.NewBinding(key.WithKeys("home", "g", "end", "G"), key.WithHelp("g/G", "first/last")),
	}
}

// arrowsOnly is the keymap without its letter keys (k j g G h l, y n and
// + -): for when a text input has the keyboard and letters are typed, the
// arrows, pgup/pgdn, home/end, enter, esc and tab still navigate.
func (k navKeys) arrowsOnly() navKeys {
	k.Up = onlyKeys(k.Up, "up")
	k.Down = onlyKeys(k.Down, "down")
	k.Home = onlyKeys(k.Home, "home")
	k.End = onlyKeys(k.End, "end")
	k.Left = onlyKeys(k.Left, "left")
	k.Right = onlyKeys(k.Right, "right")
	k.Back = onlyKeys(k.Back, "esc")
	k.Move = onlyKeys(k.Move, "up", "down")
	k.Ends = onlyKeys(k.Ends, "home", "end")
	k.Yes = key.NewBinding(key.WithDisabled())
	k.No = key.NewBinding(key.WithDisabled())
	k.Increase = key.NewBinding(key.WithDisabled())
	k.Decrease = key.NewBinding(key.WithDisabled())
	return k
}

// onlyKeys is b answering to keys only, with b's help.
func onlyKeys(b key.Binding, keys ...string) key.Binding {
	b.SetKeys(keys...)
	return b
}

// nav is the navigation keymap every pane and component shares.
var nav = newNavKeys()

// navArrows is nav for when a text input has the keyboard (arrowsOnly).
var navArrows = nav.arrowsOnly()

// keyDigit is the digit 1-9 of a key like "3" or "alt+3" (tab numbers,
// store numbers, how many run at once); ok is false for any other key.
// Match the key's binding first: keyDigit only reads the digit.
func keyDigit(msg tea.KeyMsg) (n int, ok bool) {
	s := strings.TrimPrefix(msg.String(), "alt+")
	if len(s) != 1 || s[0] < '1' || s[0] > '9' {
		return 0, false
	}
	return int(s[0] - '0'), true
}

// mover is what the navigation keys move: a list cursor or a scroll section.
type mover interface {
	up()
	down()
	pageUp()
	pageDown()
	home()
	end()
}

// navigate applies a navigation key of keymap k to m and reports whether
// msg was one (at an end, the key is still consumed).
func navigate(m mover, msg tea.KeyMsg, k navKeys) bool {
	switch {
	case key.Matches(msg, k.Up):
		m.up()
	case key.Matches(msg, k.Down):
		m.down()
	case key.Matches(msg, k.PageUp):
		m.pageUp()
	case key.Matches(msg, k.PageDown):
		m.pageDown()
	case key.Matches(msg, k.Home):
		m.home()
	case key.Matches(msg, k.End):
		m.end()
	default:
		return false
	}
	return true
}
