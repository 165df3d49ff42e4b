package tui

import "github.com/charmbracelet/lipgloss"

// Styles holds every colour and border of the console, built once. Nothing
// else in tui/ calls lipgloss.NewStyle with a colour.
type Styles struct {
	Title       lipgloss.Style
	HeaderInfo  lipgloss.Style
	HeaderLabel lipgloss.Style
	Tab         lipgloss.Style
	ActiveTab   lipgloss.Style
	Rule        lipgloss.Style
	Muted       lipgloss.Style
	Emphasis    lipgloss.Style
	StatusError lipgloss.Style
	StatusInfo  lipgloss.Style
	StatusFaded lipgloss.Style
	Prompt      lipgloss.Style
	Selected    lipgloss.Style
	OK          lipgloss.Style
	Failed      lipgloss.Style
	// BarFull and BarEmpty colour the Plans tab's progress bar (a
	// bubbles/progress bar, which takes colours rather than styles).
	BarFull, BarEmpty lipgloss.AdaptiveColor
}

// DefaultStyles is the console's look. Colours are adaptive, so the same
// styles read on light and dark terminals; with no colour (an ASCII profile,
// as in golden tests) every distinction still shows through text.
func DefaultStyles() Styles {
	accent := lipgloss.AdaptiveColor{Light: "#5A3FC0", Dark: "#B4A1FF"}
	muted := lipgloss.AdaptiveColor{Light: "#777777", Dark: "#8A8A8A"}
	faint := lipgloss.AdaptiveColor{Light: "#AAAAAA", Dark: "#555555"}
	red := lipgloss.AdaptiveColor{Light: "#C0262D", Dark: "#FF6B6B"}
	green := lipgloss.AdaptiveColor{Light: "#1E7A34", Dark: "#7BD88F"}
	return Styles{
		Title:       lipgloss.NewStyle().Bold(true).Foreground(accent),
		HeaderInfo:  lipgloss.NewStyle(),
		HeaderLabel: lipgloss.NewStyle().Foreground(muted),
		Tab:         lipgloss.NewStyle().Foreground(muted),
		ActiveTab:   lipgloss.NewStyle().Bold(true).Foreground(accent),
		Rule:        lipgloss.NewStyle().Foreground(faint),
		Muted:       lipgloss.NewStyle().Foreground(muted),
		Emphasis:    lipgloss.NewStyle().Bold(true),
		StatusError: lipgloss.NewStyle().Bold(true).Foreground(red),
		StatusInfo:  lipgloss.NewStyle().Foreground(green),
		StatusFaded: lipgloss.NewStyle().Foreground(faint),
		Prompt:      lipgloss.NewStyle().Bold(true).Foreground(accent),
		Selected:    lipgloss.NewStyle().Bold(true).Foreground(accent),
		OK:          lipgloss.NewStyle().Foreground(green),
		Failed:      lipgloss.NewStyle().Foreground(red),
		BarFull:     green,
		BarEmpty:    faint,
	}
}
