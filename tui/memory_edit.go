package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/memory"
)

// newMemorizeForm is the form m opens: the store (the one selected), the
// kind of memory, its text, tags and importance. It is the Goals tab's
// fieldForm, so that both tabs' forms look and work alike.
func newMemorizeForm(styles *Styles, store string) *fieldForm {
	f := newFieldForm(styles, "Memorize",
		newField("store", store, "working, episodic or another store", "", 30, 200),
		newField("kind", "fact", "fact, preference, event, task…", "what kind of memory", 20, 100).choice(),
		newField("text", "", "what to remember", "", 200, 4000),
		newField("tags", "", "e.g. offsite, budget", "", 40, 300),
		newField("importance", "0.5", "", "0 to 1", 5, 5).choice(),
	)
	f.focused = 2 // the text: the store and kind are right most of the time
	return f
}

// memorizeArgs validates the form into memory.memorize's arguments; on a
// mistake it names the field and the fix (nothing is sent then).
func memorizeArgs(f *fieldForm) (memory.MemorizeArgs, tea.Cmd) {
	store, kind, text := f.value("store"), f.value("kind"), f.value("text")
	switch {
	case store == "":
		return memory.MemorizeArgs{}, f.fail("store", "name the store, e.g. working or episodic")
	case kind == "":
		return memory.MemorizeArgs{}, f.fail("kind", "say what kind of memory it is, e.g. fact, preference or event")
	case strings.ContainsAny(kind, " \t/"):
		return memory.MemorizeArgs{}, f.fail("kind", "%q: a kind is one word, e.g. fact or preference", kind)
	case text == "":
		return memory.MemorizeArgs{}, f.fail("text", "type what to remember")
	}
	imp, err := strconv.ParseFloat(f.value("importance"), 64)
	if f.value("importance") == "" {
		imp, err = 0.5, nil
	}
	if err != nil || imp < 0 || imp > 1 {
		return memory.MemorizeArgs{}, f.fail("importance", "%q is not an importance: give a number from 0 to 1, e.g. 0.7", f.value("importance"))
	}
	return memory.MemorizeArgs{Store: store, Item: memory.ItemInput{Type: kind, Text: text, Tags: splitList(f.value("tags")), Importance: &imp}}, nil
}

// openMemorize opens the memorize form on the selected store.
func (p *memoryPane) openMemorize() tea.Cmd {
	p.memorize = newMemorizeForm(p.styles, p.list.want.store)
	p.memorize.setWidth(p.width)
	p.layout()
	return p.memorize.focus()
}

func (p *memoryPane) memorizeKey(msg tea.KeyMsg) tea.Cmd {
	f := p.memorize
	switch {
	case key.Matches(msg, p.keys.Cancel):
		p.memorize = nil
		p.layout()
		return nil
	case key.Matches(msg, p.keys.Run):
		if f.send.busy {
			return nil
		}
		args, cmd := memorizeArgs(f)
		if args.Store == "" {
			return cmd
		}
		return request(&p.requests, &f.send, memory.ActionMemorize, args)
	}
	return f.update(msg)
}

// memorized takes memory.memorize's answer: the form closes and the list
// shows the store the item went to, or the form says what the engine
// refused.
func (p *memoryPane) memorized(msg resultMsg[memory.MemorizeResult]) tea.Cmd {
	f := p.memorize
	if f == nil {
		return nil
	}
	if latest, _ := f.send.answer(msg.req); !latest {
		return nil
	}
	if msg.err != nil {
		f.err = errs.As(msg.err).Message
		return nil // the root shows it in the status line too
	}
	p.memorize = nil
	res := msg.value
	store := f.value("store")
	id := res.Ref
	if res.Item != nil {
		id = res.Item.ID
	}
	text := fmt.Sprintf("Memorized %s in %s.", id, store)
	if n := len(res.Evicted); n > 0 {
		text += fmt.Sprintf(" %s evicted to make room (d shows them).", plural(n, "item was", "items were"))
	}
	p.layout()
	return tea.Batch(showStatus(text, false), p.selectStore(store), p.reload())
}

// unforget brings the selected soft-forgotten item back.
func (p *memoryPane) unforget(store string, it *memory.Item) tea.Cmd {
	if it == nil {
		return nil
	}
	if !it.Deleted {
		return showStatus(it.ID+" is not forgotten: u brings back a forgotten item (d shows them)", false)
	}
	return request(&p.requests, &p.unforgetLoad, memory.ActionUnforget, memory.UnforgetArgs{Store: store, ID: it.ID})
}

// unforgotten takes memory.unforget's answer.
func (p *memoryPane) unforgotten(msg resultMsg[memory.UnforgetResult]) tea.Cmd {
	if latest, _ := p.unforgetLoad.answer(msg.req); !latest || msg.err != nil {
		return nil // the root shows a failure in the status line
	}
	res := msg.value
	if res.Item == nil {
		return showStatus("unexpected memory.unforget result", true)
	}
	text := fmt.Sprintf("Brought %s back: remember finds it again.", res.Item.ID)
	if n := len(res.Evicted); n > 0 {
		text += fmt.Sprintf(" %s evicted to make room.", plural(n, "item was", "items were"))
	}
	return tea.Batch(showStatus(text, false), p.reload())
}

// quietFailure: a store no longer shared with the viewer is said plainly
// where it showed, not as an error in the status line. That holds for a
// load the pane has since replaced too (it moved to another store when
// the store list came back first): its refusal is old news.
func (p *memoryPane) quietFailure(req int, err error) bool {
	return errs.KindOf(err) == errs.Permission && p.reads.has(req)
}

// storeGone is what the list or the detail says when its store cannot be
// read any more.
func storeGone(err error, store string) string {
	if errs.KindOf(err) == errs.Permission {
		return "Store " + store + " is no longer shared with you."
	}
	return errs.As(err).Message
}
