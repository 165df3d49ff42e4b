package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// keyMsg is the key press whose String() is s ("pgup", "shift+tab", "k",
// "alt+3"), as the terminal would send it.
func keyMsg(t *testing.T, s string) tea.KeyMsg {
	t.Helper()
	named := map[string]tea.KeyType{
		"up": tea.KeyUp, "down": tea.KeyDown, "left": tea.KeyLeft, "right": tea.KeyRight,
		"pgup": tea.KeyPgUp, "pgdown": tea.KeyPgDown, "home": tea.KeyHome, "end": tea.KeyEnd,
		"enter": tea.KeyEnter, "esc": tea.KeyEsc, "backspace": tea.KeyBackspace,
		"tab": tea.KeyTab, "shift+tab": tea.KeyShiftTab, "shift+up": tea.KeyShiftUp, "shift+down": tea.KeyShiftDown,
	}
	var msg tea.KeyMsg
	if k, ok := named[s]; ok {
		msg = tea.KeyMsg{Type: k}
	} else if r, ok := strings.CutPrefix(s, "alt+"); ok {
		msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(r), Alt: true}
	} else {
		msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
	}
	if msg.String() != s {
		t.Fatalf("keyMsg(%q) reads %q", s, msg.String())
	}
	return msg
}

// TestNavKeysCoverEveryRawKey: every key string the panes compared by hand
// (msg.String() == "up" and the like) is one binding of the keymap, so that
// a pane converter can replace each comparison with key.Matches.
func TestNavKeysCoverEveryRawKey(t *testing.T) {
	t.Parallel()
	k := newNavKeys()
	for raw, b := range map[string]key.Binding{
		"up": k.Up, "k": k.Up, "down": k.Down, "j": k.Down,
		"pgup": k.PageUp, "pgdown": k.PageDown,
		"home": k.Home, "g": k.Home, "end": k.End, "G": k.End,
		"left": k.Left, "h": k.Left, "right": k.Right, "l": k.Right,
		"tab": k.Next, "shift+tab": k.Prev, "shift+up": k.SideUp, "shift+down": k.SideDown,
		"+": k.Increase, "-": k.Decrease,
		"enter": k.Enter, "esc": k.Esc, "backspace": k.Back,
		"y": k.Yes, "Y": k.Yes, "n": k.No, "N": k.No,
	} {
		if !key.Matches(keyMsg(t, raw), b) {
			t.Errorf("%q does not match its binding %v", raw, b.Keys())
		}
	}
	// The footer's combined bindings match what their parts do.
	for _, raw := range []string{"up", "k", "down", "j"} {
		if !key.Matches(keyMsg(t, raw), k.Move) {
			t.Errorf("Move does not match %q", raw)
		}
	}
	for _, raw := range []string{"home", "g", "end", "G"} {
		if !key.Matches(keyMsg(t, raw), k.Ends) {
			t.Errorf("Ends does not match %q", raw)
		}
	}
	if !key.Matches(keyMsg(t, "pgup"), k.Pages) || !key.Matches(keyMsg(t, "pgdown"), k.Pages) {
		t.Error("Pages does not match pgup and pgdown")
	}
	// Keys that are not navigation match nothing that moves.
	for _, raw := range []string{"x", "q", "K", "ctrl+c"} {
		msg := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(raw)}
		if raw == "ctrl+c" {
			msg = tea.KeyMsg{Type: tea.KeyCtrlC}
		}
		if key.Matches(msg, k.Up, k.Down, k.PageUp, k.PageDown, k.Home, k.End, k.Left, k.Right, k.Yes, k.No, k.Esc, k.Back) {
			t.Errorf("%q matches a navigation key", raw)
		}
	}
}

// TestNavKeysHaveHelp: every binding says what it does, for the footer.
func TestNavKeysHaveHelp(t *testing.T) {
	t.Parallel()
	k := newNavKeys()
	for name, b := range map[string]key.Binding{
		"Up": k.Up, "Down": k.Down, "PageUp": k.PageUp, "PageDown": k.PageDown, "Home": k.Home, "End": k.End,
		"Left": k.Left, "Right": k.Right, "Next": k.Next, "Prev": k.Prev, "SideUp": k.SideUp, "SideDown": k.SideDown,
		"Increase": k.Increase, "Decrease": k.Decrease, "Enter": k.Enter, "Back": k.Back, "Esc": k.Esc,
		"Yes": k.Yes, "No": k.No, "Move": k.Move, "Pages": k.Pages, "Ends": k.Ends,
	} {
		if h := b.Help(); h.Key == "" || h.Desc == "" {
			t.Errorf("%s has no help: %+v", name, h)
		}
	}
	if h := k.Move.Help(); h.Key != "↑/↓" || h.Desc != "move" {
		t.Errorf("Move's help is %+v", h)
	}
}

// TestNavArrowsLeaveLettersToTheInput: while a text input has the keyboard
// letters are typed, not navigation; the arrows still move.
func TestNavArrowsLeaveLettersToTheInput(t *testing.T) {
	t.Parallel()
	a := newNavKeys().arrowsOnly()
	for _, raw := range []string{"k", "j", "g", "G", "h", "l", "y", "n", "+", "-", "backspace"} {
		if key.Matches(keyMsg(t, raw), a.Up, a.Down, a.Home, a.End, a.Left, a.Right, a.Yes, a.No, a.Increase, a.Decrease, a.Back, a.Move, a.Ends) {
			t.Errorf("%q navigates while typing", raw)
		}
	}
	for raw, b := range map[string]key.Binding{"up": a.Up, "down": a.Down, "home": a.Home, "end": a.End, "pgup": a.PageUp,
		"left": a.Left, "right": a.Right, "esc": a.Back, "enter": a.Enter, "tab": a.Next} {
		if !key.Matches(keyMsg(t, raw), b) {
			t.Errorf("%q no longer navigates while typing", raw)
		}
	}
	// The help stays: the footer reads the same.
	if a.Up.Help() != nav.Up.Help() {
		t.Errorf("help changed: %+v", a.Up.Help())
	}
	// The shared keymap is untouched.
	if !key.Matches(keyMsg(t, "k"), nav.Up) {
		t.Error("arrowsOnly changed nav")
	}
}

func TestKeyDigitReadsTheDigit(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]int{"1": 1, "6": 6, "9": 9, "alt+3": 3} {
		if n, ok := keyDigit(keyMsg(t, raw)); !ok || n != want {
			t.Errorf("keyDigit(%q) = %d, %v; want %d", raw, n, ok, want)
		}
	}
	for _, raw := range []string{"0", "a", "up", "12", "alt+x"} {
		if n, ok := keyDigit(keyMsg(t, raw)); ok {
			t.Errorf("keyDigit(%q) = %d, want none", raw, n)
		}
	}
}
