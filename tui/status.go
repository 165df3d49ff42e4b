package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// status is the one-line message area above the footer. A message shows
// bright, fades after a while, then goes.
type status struct {
	text    string
	isError bool
	faded   bool
	id      int // which message a fade timer belongs to
	fade    time.Duration
}

type statusFadeMsg struct {
	id    int
	stage int // 1: dim it, 2: clear it
}

// set shows a message and starts its fade timer.
func (s *status) set(text string, isError bool) tea.Cmd {
	s.id++
	s.text, s.isError, s.faded = oneLine(text), isError, false
	id := s.id
	return tea.Tick(s.fade, func(time.Time) tea.Msg { return statusFadeMsg{id: id, stage: 1} })
}

// advance applies a fade step if it belongs to the current message.
func (s *status) advance(msg statusFadeMsg) {
	if msg.id != s.id {
		return
	}
	switch msg.stage {
	case 1:
		s.faded = true
	case 2:
		s.text = ""
	}
}

// next schedules the step after msg, if any.
func (s *status) next(msg statusFadeMsg) tea.Cmd {
	if msg.id != s.id || msg.stage != 1 {
		return nil
	}
	return tea.Tick(s.fade, func(time.Time) tea.Msg { return statusFadeMsg{id: msg.id, stage: 2} })
}

func (s *status) view(st *Styles, width int) string {
	if s.text == "" {
		return ""
	}
	style := st.StatusInfo
	switch {
	case s.faded:
		style = st.StatusFaded
	case s.isError:
		style = st.StatusError
	}
	if width < 2 {
		return ""
	}
	// A message too long keeps its start and its last clause (what to do
	// instead), the middle cut at spaces; the pane that asked shows an
	// error in full (the Plans tab's notice, the palette's result).
	return style.Render(" " + fitMessage(s.text, width-1))
}
