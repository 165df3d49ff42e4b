package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
)

// chatChannels are the channels the picker goes through, "" (none: the
// conversation only, no thread) first.
var chatChannels = append(append([]string{""}, episodic.ExplicitChannels...), episodic.ImplicitChannels...)

// channelPicker chooses the channel messages go on and, on an explicit
// channel, the thread: an existing one, or a new one its first message
// starts.
type channelPicker struct {
	channel string
	threads []*episodic.Thread
	loaded  bool
	// load is the thread.list in flight; dirty when a thread was created
	// or messaged meanwhile, so that the list is asked again.
	load loader
	err  string
	// list is the cursor: row 0 is a new thread, row i is threads[i-1].
	list listCursor
}

// chatRoute is where thread.message sent one of the conversation's
// messages: from chat.send's answer, or from what chat.send recorded with
// the message (after a restart).
type chatRoute struct{ core.ChatRoute }

// newChatRoute is where res says a message on channel went.
func newChatRoute(channel string, res episodic.MessageResult) *chatRoute {
	return &chatRoute{core.NewChatRoute(channel, res)}
}

func channelName(c string) string {
	if c == "" {
		return "none"
	}
	return c
}

func (p *chatPane) openPicker() tea.Cmd {
	if err := p.conn.CheckAction(episodic.ActionThreadMessage.Name()); err != nil {
		return showStatus("This engram has no episodic layer: messages go to the conversation only.", true)
	}
	p.picker = &channelPicker{channel: p.route.channel}
	p.picker.list.setLen(1) // a new thread, until the threads come
	p.input.Blur()
	p.find.input.Blur()
	p.render()
	return p.loadPicker()
}

func (p *chatPane) loadPicker() tea.Cmd {
	return request(&p.requests, &p.picker.load, episodic.ActionThreadList, action.None{})
}

// refreshPicker lists the threads again once the list in flight (if any)
// has answered.
func (p *chatPane) refreshPicker() tea.Cmd {
	if p.picker == nil {
		return nil
	}
	return p.refresh(&p.picker.load, p.loadPicker)
}

// setList takes thread.list's answer (the cursor starts on the thread
// messages go to now, then stays on its thread), and asks again if the
// threads changed meanwhile.
func (c *channelPicker) setList(p *chatPane, msg resultMsg[episodic.ListResult]) tea.Cmd {
	latest, again := c.load.answer(msg.req)
	if !latest {
		return nil
	}
	if msg.err != nil {
		c.err = errs.As(msg.err).Message
	} else {
		first := !c.loaded
		at := c.threadID()
		c.err, c.loaded = "", true
		c.threads = slices.DeleteFunc(msg.value.Threads, func(t *episodic.Thread) bool { return t == nil })
		p.learnTitles(c.threads)
		if first && c.channel == p.route.channel {
			at = p.route.threadID
		}
		c.list.setLen(len(c.threads) + 1)
		c.list.set(0)
		if at != "" {
			c.list.keep(func(i int) bool { return i > 0 && c.threads[i-1].ID == at })
		}
	}
	p.render()
	if again {
		return p.loadPicker()
	}
	return nil
}

// threadID is the thread under the cursor ("" for a new one).
func (c *channelPicker) threadID() string {
	if i := c.list.Index(); i > 0 && i <= len(c.threads) {
		return c.threads[i-1].ID
	}
	return ""
}

// cycle moves to the next channel (or the previous one).
func (c *channelPicker) cycle(back bool) {
	i := slices.Index(chatChannels, c.channel)
	if back {
		i = (i + len(chatChannels) - 1) % len(chatChannels)
	} else {
		i = (i + 1) % len(chatChannels)
	}
	c.channel = chatChannels[i]
}

func (p *chatPane) pickerKey(msg tea.KeyMsg) tea.Cmd {
	c := p.picker
	k := p.keys
	switch {
	case key.Matches(msg, k.Cancel):
		return p.closePicker()
	case key.Matches(msg, k.Pick):
		r := &p.route
		r.channel, r.threadID, r.announce, r.fresh, r.continued = c.channel, "", "", "", ""
		if episodic.IsExplicit(c.channel) {
			r.threadID = c.threadID()
			if r.threadID == "" {
				r.fresh = p.conv // "+ a new thread", chosen
			}
		}
		return tea.Batch(p.closePicker(), showStatus(p.channelNote(), false))
	case key.Matches(msg, navArrows.Left), key.Matches(msg, nav.Prev):
		c.cycle(true)
	case key.Matches(msg, k.Channel), key.Matches(msg, navArrows.Right), key.Matches(msg, nav.Next):
		c.cycle(false)
	case key.Matches(msg, navArrows.Up), key.Matches(msg, navArrows.Down):
		if !episodic.IsExplicit(c.channel) {
			return nil
		}
		if key.Matches(msg, navArrows.Up) {
			c.list.up()
		} else {
			c.list.down()
		}
	}
	return nil
}

// closePicker gives the keyboard back to what had it.
func (p *chatPane) closePicker() tea.Cmd {
	p.picker = nil
	p.render()
	return p.refocus()
}

// refocus gives the keyboard back to the line the pane's mode types into
// (after a picker or the switcher closes).
func (p *chatPane) refocus() tea.Cmd {
	switch p.mode {
	case chatTyping:
		return p.input.Focus()
	case chatSearching:
		return p.find.input.Focus()
	}
	return nil
}

// channelNote says where messages go now.
func (p *chatPane) channelNote() string {
	switch {
	case p.route.channel == "":
		return "No channel: messages go to the conversation only, no thread."
	case !episodic.IsExplicit(p.route.channel):
		// "On whatsapp: the latest sms/whatsapp/voice thread, new after 30
		// min of silence.": a status line's 80 columns.
		return fmt.Sprintf("On %s: the latest %s thread, new after %d min of silence.",
			p.route.channel, strings.Join(episodic.ImplicitChannels, "/"), episodic.DefaultInactivityTimeout)
	case p.route.shownThread() == "":
		return fmt.Sprintf("Messages go on %s: the next one starts a new thread.", p.route.channel)
	}
	return withTitle("Messages go on "+p.route.channel+", in thread “%s”.", p.threadTitle(p.route.shownThread()))
}

// learnTitles keeps the threads' titles for the routing notes.
func (p *chatPane) learnTitles(threads []*episodic.Thread) {
	for _, t := range threads {
		p.route.titles[t.ID] = oneLine(t.Title)
	}
}

func (p *chatPane) threadTitle(id string) string {
	if t, ok := p.route.titles[id]; ok {
		return t
	}
	return shortID(id)
}

// loadTitles asks for the threads' titles (after a message went to a
// thread this pane may not know).
func (p *chatPane) loadTitles() tea.Cmd {
	return request(&p.requests, &p.route.load, episodic.ActionThreadList, action.None{})
}

// titlesResult learns the titles; a message that started the thread the
// next ones continue says so in the status line (replacing "the next one
// starts a new thread").
func (p *chatPane) titlesResult(msg resultMsg[episodic.ListResult]) tea.Cmd {
	if latest, _ := p.route.load.answer(msg.req); !latest {
		return nil
	}
	if msg.err == nil {
		p.learnTitles(slices.DeleteFunc(msg.value.Threads, func(t *episodic.Thread) bool { return t == nil }))
	}
	p.render()
	if p.route.announce == "" {
		return nil
	}
	id := p.route.announce
	p.route.announce = ""
	if id != p.route.threadID {
		return nil // moved elsewhere meanwhile
	}
	if !p.startedThread(id) {
		// The engine continued the conversation's thread from an earlier
		// run, one this pane had not seen (its messages no longer in the
		// buffer).
		return showStatus(withTitle("Messages on "+p.route.channel+" continue the conversation's thread “%s”.", p.threadTitle(id)), false)
	}
	return showStatus(withTitle("New thread “%s”: messages on "+p.route.channel+" continue it.", p.threadTitle(id)), false)
}

// startedThread reports whether one of the conversation's messages
// started the thread id (or none went there, to say otherwise).
func (p *chatPane) startedThread(id string) bool {
	seen := false
	for _, r := range p.route.routes[p.conv] {
		if r.ThreadID == id {
			if r.NewThread {
				return true
			}
			seen = true
		}
	}
	return !seen
}

// routeNote says where a message went: "→ sms · thread “Weather in New
// York” (new, linked to “…”)".
func (p *chatPane) routeNote(r *chatRoute) string {
	var how []string
	switch {
	case r.NewThread:
		how = append(how, "new")
		if r.EndedThread != "" && !slices.Contains(r.Linked, r.EndedThread) {
			how = append(how, fmt.Sprintf("“%s” had gone quiet", p.threadTitle(r.EndedThread)))
		}
		if len(r.Linked) > 0 {
			var titles []string
			for _, id := range r.Linked {
				titles = append(titles, "“"+p.threadTitle(id)+"”")
			}
			how = append(how, "linked to "+strings.Join(titles, ", "))
		} else if r.Decisions > 0 {
			how = append(how, "not linked to "+plural(r.Decisions, "earlier thread", "earlier threads"))
		}
	default:
		how = append(how, fmt.Sprintf("turn %d", r.TurnCount))
	}
	return fmt.Sprintf("→ %s · thread “%s” (%s)", r.Channel, p.threadTitle(r.ThreadID), strings.Join(how, ", "))
}

// restoreRoutes takes where the loaded messages went from what chat.send
// recorded with them, so that the notes under them survive a restart;
// and on an explicit channel with no thread yet (and no new one chosen),
// the thread the conversation's latest message there went to, which the
// engine continues (issue 14, bug 6). It asks for the titles it lacks.
func (p *chatPane) restoreRoutes() tea.Cmd {
	r := &p.route
	if r.routes[p.conv] == nil {
		r.routes[p.conv] = map[int]*chatRoute{}
	}
	latest, unknown := "", false
	for _, u := range p.buf.utts {
		stored, ok := core.ChatRouteOf(u.Metadata)
		if !ok || u.Speaker != "user" {
			continue
		}
		r.routes[p.conv][u.UtteranceIndex] = &chatRoute{stored}
		if stored.Channel == r.channel {
			latest = stored.ThreadID
		}
		for _, id := range append([]string{stored.ThreadID, stored.EndedThread}, stored.Linked...) {
			if _, ok := r.titles[id]; id != "" && !ok {
				unknown = true
			}
		}
	}
	// A send in flight says itself where its message went (and announces a
	// new thread).
	if episodic.IsExplicit(r.channel) && r.threadID == "" && r.fresh != p.conv && latest != "" && !p.out.load.busy {
		r.continued = latest
	}
	if unknown {
		return p.loadTitles()
	}
	return nil
}

// pickerLines render the picker in the main area.
func (p *chatPane) pickerLines(w, h int) []string {
	st := p.styles
	c := p.picker
	lines := []string{truncateTo(" "+st.Emphasis.Render("Channel")+st.Muted.Render(" · ctrl+t or ←/→ changes it · enter uses it"), w), ""}
	var names []string
	for _, ch := range chatChannels {
		if ch == c.channel {
			names = append(names, st.Selected.Render("["+channelName(ch)+"]"))
		} else {
			names = append(names, st.Muted.Render(" "+channelName(ch)+" "))
		}
	}
	lines = append(lines, "  "+strings.Join(names, " "), "")
	switch {
	case c.channel == "":
		return append(lines, styleLines(st.Muted, wrapText("No channel: messages go to the conversation only, and no thread is kept.", w-2, " "))...)
	case !episodic.IsExplicit(c.channel):
		return append(lines, styleLines(st.Muted, wrapText(fmt.Sprintf("%s is implicit: engram infers the thread. A message continues the latest "+
			"thread used on %s, or after %d minutes of silence starts a new one, linked to the earlier threads it continues "+
			"(the Threads tab shows them).", c.channel, implicitChannels("or"), episodic.DefaultInactivityTimeout), w-2, " "))...)
	}
	lines = append(lines, styleLines(st.Muted, wrapText(c.channel+" is explicit: messages go to the thread chosen here (↑/↓).", w-2, " "))...)
	lines = append(lines, "")
	switch {
	case c.err != "":
		lines = append(lines, st.Failed.Render(" ✗ "+oneLine(c.err)))
	case !c.loaded:
		lines = append(lines, st.Muted.Render(" Loading…"))
	}
	c.list.setLen(len(c.threads) + 1)
	c.list.setHeight(h - len(lines))
	start, end := c.list.visible()
	titleW := 12
	for _, t := range c.threads {
		titleW = max(titleW, min(lineWidth(oneLine(t.Title))+2, (w-4)*3/5))
	}
	for i := start; i < end; i++ {
		var text string
		if i == 0 {
			text = "+ a new thread (the next message starts it)"
		} else {
			t := c.threads[i-1]
			facts := oneLine(strings.Join(t.Channels, ",")) + " · " + plural(t.TurnCount, "turn", "turns") + " · " + t.Status
			if t.ID == p.route.shownThread() && p.route.channel == c.channel {
				facts += " · current"
			}
			text = fitLine(truncateTo(oneLine(t.Title), titleW-2), titleW) + facts
		}
		text = truncateTo(text, w-4)
		switch {
		case i == c.list.Index():
			lines = append(lines, " "+st.Selected.Render("▸ "+text))
		case i == 0:
			lines = append(lines, "   "+st.Prompt.Render(text))
		default:
			lines = append(lines, "   "+text)
		}
	}
	return lines
}
