package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/history"
)

// Without a model nothing answers a message: the person can write the
// assistant's reply by hand (issue 14, offline chat). The reply is an
// ordinary history.write as the assistant, in the turn of the message it
// answers, and when that message went to a thread it is copied there as
// the assistant's, so that the thread's context pairs the question with
// its answer.

// chatReply is the reply being written by hand, and the writes it makes.
type chatReply struct {
	input textinput.Model
	// conv is the conversation it goes to; text what was saved; route
	// where the message it answers went (nil: to no thread).
	conv  string
	text  string
	route *chatRoute
	write loader
	copy  loader
}

func newChatReply(styles *Styles) chatReply {
	in := textinput.New()
	in.Prompt = "assistant› "
	in.PromptStyle = styles.Prompt
	in.Placeholder = "the assistant's reply (enter saves, esc cancels)"
	in.CharLimit = 8000
	return chatReply{input: in}
}

// offlineNote is what the conversation says once when no model answers:
// how to write the reply by hand from where the keyboard is.
func (p *chatPane) offlineNote() string {
	if p.Capturing() {
		return "No model replies: esc, then a, writes its reply by hand."
	}
	return "No model replies: a writes the assistant's reply by hand."
}

// startReply opens the reply line, unless a model answers or the
// conversation has no message to answer yet.
func (p *chatPane) startReply() tea.Cmd {
	if p.hasModel() {
		return showStatus("A model answers messages here; a reply by hand is for when none is configured.", false)
	}
	if p.out.text != "" {
		return showStatus("Still waiting for the last message: a reply can follow once it is in.", false)
	}
	if len(p.buf.utts) == 0 {
		return showStatus("Nothing to reply to yet: enter types a message first.", false)
	}
	p.find.clear()
	p.buf.marked = false
	p.mode, p.main = chatReplying, mainConversation
	p.reply.input.SetValue("")
	p.reply.input.Width = max(p.width-len(p.reply.input.Prompt)-4, 1)
	p.render()
	p.buf.view.end()
	return p.reply.input.Focus()
}

func (p *chatPane) replyKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	switch {
	case key.Matches(msg, k.Save):
		return p.saveReply()
	case key.Matches(msg, k.Cancel):
		p.mode = chatBrowse
		p.reply.input.Blur()
		p.render()
		return nil
	case p.mainView().handleKeyWith(msg, chatTypingNav):
		return nil
	}
	var cmd tea.Cmd
	p.reply.input, cmd = p.reply.input.Update(msg)
	return cmd
}

// saveReply writes the reply as the assistant's.
func (p *chatPane) saveReply() tea.Cmd {
	text := strings.TrimSpace(p.reply.input.Value())
	if text == "" {
		return nil
	}
	r := &p.reply
	r.conv, r.text, r.route = p.conv, text, p.lastUserRoute()
	r.input.SetValue("")
	r.input.Blur()
	p.mode = chatBrowse
	p.render()
	return request(&p.requests, &r.write, history.ActionWrite,
		history.WriteRequest{Conversation: p.conv, Speaker: "assistant", Text: text})
}

// lastUserRoute is where the conversation's latest user message went: the
// thread a reply to it is copied into (nil: none).
func (p *chatPane) lastUserRoute() *chatRoute {
	for i := len(p.buf.utts) - 1; i >= 0; i-- {
		if u := p.buf.utts[i]; u.Speaker == "user" {
			if r := p.route.routes[p.conv][u.UtteranceIndex]; r != nil && r.ThreadID != "" {
				return r
			}
			return nil
		}
	}
	return nil
}

// replyWritten takes history.write's answer: on success the reply goes
// into the thread of the message it answers; on failure the text comes
// back to try again (the root shows the error).
func (p *chatPane) replyWritten(msg resultMsg[history.WriteResult]) tea.Cmd {
	r := &p.reply
	if latest, _ := r.write.answer(msg.req); !latest {
		return nil
	}
	if msg.err != nil {
		if r.conv == p.conv {
			p.mode = chatReplying
			r.input.SetValue(r.text)
			r.input.CursorEnd()
			p.render()
			return r.input.Focus()
		}
		return nil
	}
	at := ""
	if u := msg.value.Utterance; u != nil {
		at = fmt.Sprintf(" as #%d", u.UtteranceIndex)
	}
	if r.route == nil {
		return tea.Batch(p.reload(), showStatus("Reply recorded"+at+" as the assistant's.", false))
	}
	req := episodic.MessageRequest{Channel: r.route.Channel, ThreadID: r.route.ThreadID, Speaker: "assistant", Text: r.text}
	return tea.Batch(p.reload(), request(&p.requests, &r.copy, episodic.ActionThreadMessage, req))
}

// replyCopied takes thread.message's answer for a reply.
func (p *chatPane) replyCopied(msg resultMsg[episodic.MessageResult]) tea.Cmd {
	if latest, _ := p.reply.copy.answer(msg.req); !latest || msg.err != nil {
		return nil
	}
	return showStatus("Reply recorded as the assistant's, here and in thread “"+p.threadTitle(msg.value.ThreadID)+"”.", false)
}

// configured follows history.configure from any source (the palette, a
// script, another agent): the side panel's figures and summary reload at
// once, and the context page says the last message was sent before it.
func (p *chatPane) configured(c history.ConfiguredEvent) tea.Cmd {
	if c.Conversation == p.out.lastConv && p.out.last != nil {
		p.out.reconfigured = &c
	}
	if c.Conversation != p.conv {
		return nil
	}
	p.render()
	return p.reload()
}

// accessChanged follows history.share and history.revoke: the switcher's
// list shows a conversation shared with the console's agent at once, and a
// revoke of the conversation shown says so instead of reading it again
// into a PermissionError.
func (p *chatPane) accessChanged(a history.AccessEvent) tea.Cmd {
	var cmds []tea.Cmd
	if p.switcher != nil {
		cmds = append(cmds, p.refresh(&p.switcher.load, p.loadSwitcher))
	}
	if a.Principal != p.conn.Agent() || a.Conversation != p.conv {
		return tea.Batch(cmds...)
	}
	switch {
	case a.Change == "revoked" && !p.buf.revoked:
		p.buf.revoked = true
		// Answers on their way are stale: they would be refused.
		p.buf.read, p.buf.stat = loader{}, loader{}
		if p.mode == chatTyping || p.mode == chatReplying {
			p.mode = chatBrowse
			p.input.Blur()
			p.reply.input.Blur()
		}
		p.render()
		cmds = append(cmds, showStatus("Access to conversation "+oneLine(p.conv)+" was taken back by its owner: ctrl+o switches to another.", false))
	case a.Change == "shared" && p.buf.revoked:
		p.buf.revoked = false
		cmds = append(cmds, p.reload())
	}
	return tea.Batch(cmds...)
}
