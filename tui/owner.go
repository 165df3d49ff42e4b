package tui

import "strconv"

// whereLabel is the header's part that says where the engine runs: "owner"
// or "attached to pid N" (short: "pid N"), or nothing when the connection
// cannot say.
func (m *Model) whereLabel(short bool) string {
	if m.where == nil {
		return ""
	}
	s := &m.styles
	if m.where.Owner {
		return s.HeaderInfo.Render("  owner")
	}
	label := "  attached to pid "
	if short {
		label = "  pid "
	}
	return s.HeaderLabel.Render(label) + s.HeaderInfo.Render(strconv.Itoa(m.where.PID))
}
