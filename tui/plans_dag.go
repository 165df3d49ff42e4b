package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/planner"
)

// planDAG is a plan's subtasks in stages: a subtask's stage is the length of
// its longest chain of dependencies (no dependencies: stage 0), so that
// every dependency sits in a stage to the left of what waits for it. Within
// a stage subtasks keep their plan order.
type planDAG struct {
	stages [][]*planner.Subtask
	stage  map[string]int
	// dependents lists, for each subtask, the ones that wait for it.
	dependents map[string][]string
}

// newPlanDAG lays a plan out. Plans are validated DAGs; a cycle or a missing
// dependency (which a stored plan cannot have) is still drawn, not looped
// on: the edge that closes a cycle is ignored.
func newPlanDAG(d *planner.Plan) *planDAG {
	byID := make(map[string]*planner.Subtask, len(d.Subtasks))
	for _, s := range d.Subtasks {
		byID[s.ID] = s
	}
	g := &planDAG{stage: map[string]int{}, dependents: map[string][]string{}}
	const visiting = -1
	var depth func(id string) int
	depth = func(id string) int {
		if n, ok := g.stage[id]; ok {
			return max(n, 0) // visiting: a cycle, counted as no edge
		}
		g.stage[id] = visiting
		n := 0
		for _, dep := range byID[id].Dependencies {
			if byID[dep] != nil {
				n = max(n, depth(dep)+1)
			}
		}
		g.stage[id] = n
		return n
	}
	deepest := 0
	for _, s := range d.Subtasks {
		deepest = max(deepest, depth(s.ID))
		for _, dep := range s.Dependencies {
			g.dependents[dep] = append(g.dependents[dep], s.ID)
		}
	}
	if len(d.Subtasks) > 0 {
		g.stages = make([][]*planner.Subtask, deepest+1)
	}
	for _, s := range d.Subtasks {
		n := g.stage[s.ID]
		g.stages[n] = append(g.stages[n], s)
	}
	return g
}

// find returns the stage and row of a subtask, or -1, -1.
func (g *planDAG) find(id string) (int, int) {
	for c, col := range g.stages {
		for r, s := range col {
			if s.ID == id {
				return c, r
			}
		}
	}
	return -1, -1
}

// dagFor is the layout of d, computed once per loaded version of the plan.
func (p *plansPane) dagFor(d *planner.Plan) *planDAG {
	if d == nil {
		return nil
	}
	if g := p.plan.dags[d.ID]; g != nil && p.plan.dagOf[d.ID] == d {
		return g
	}
	g := newPlanDAG(d)
	p.plan.dags[d.ID], p.plan.dagOf[d.ID] = g, d
	return g
}

// stepMark is a subtask's status as one character that reads without
// colour: ✓ completed, ✗ failed, ⤼ skipped, · pending, and the spinner (or
// … when it does not turn) while it runs.
func (p *plansPane) stepMark(status string) string {
	switch status {
	case planner.Completed:
		return glyphOK
	case planner.Failed:
		return glyphFailed
	case planner.Skipped:
		return "⤼"
	case planner.InProgress:
		if v := p.spinner.View(); lineWidth(v) == 1 {
			return v
		}
		return glyphEllipsis
	}
	return "·"
}

// stepStyle colours a subtask's text by its status.
func (p *plansPane) stepStyle(status, text string) string {
	s := p.styles
	switch status {
	case planner.Completed:
		return s.OK.Render(text)
	case planner.Failed:
		return s.Failed.Render(text)
	case planner.Skipped:
		return s.Muted.Render(text)
	case planner.InProgress:
		return s.Prompt.Render(text)
	}
	return text
}

// planMark is a plan's status as one character: ✓ completed, ⤼ partial
// (some skipped), ✗ aborted or failed, ‖ cancelled (resume continues it),
// ↯ interrupted (engram stopped during its run; resume continues it), ·
// pending, the spinner while it runs.
func (p *plansPane) planMark(status string) string {
	switch status {
	case planner.PlanCompleted:
		return glyphOK
	case planner.PlanPartial:
		return "⤼"
	case planner.PlanAborted, planner.PlanFailed:
		return glyphFailed
	case planner.PlanCancelled:
		return "‖"
	case planner.PlanInterrupted:
		return planGlyphInterrupted
	case planner.PlanRunning:
		return p.stepMark(planner.InProgress)
	}
	return "·"
}

func (p *plansPane) planStyle(status, text string) string {
	s := p.styles
	switch status {
	case planner.PlanCompleted:
		return s.OK.Render(text)
	case planner.PlanAborted, planner.PlanFailed:
		return s.Failed.Render(text)
	case planner.PlanPartial, planner.PlanCancelled, planner.PlanInterrupted:
		return s.Muted.Render(text)
	case planner.PlanRunning:
		return s.Prompt.Render(text)
	}
	return text
}

// stepElapsed is how long a subtask ran (or has been running, by the
// engine clock).
func stepElapsed(s *planner.Subtask, now time.Time) (time.Duration, bool) {
	switch {
	case s.StartedAt == nil:
		return 0, false
	case s.FinishedAt != nil:
		return s.FinishedAt.Sub(*s.StartedAt), true
	case s.Status == planner.InProgress:
		return now.Sub(*s.StartedAt), true
	}
	return 0, false
}

// planTimes are how long a plan ran, and over how long (issue 14, bug 7:
// one figure counted the idle time between an abort and a resume as
// running). run is the time some subtask was running, overlaps counted
// once: the runs' spans, without the time between them. wall is from the
// first subtask's start to the last one's end. A subtask running counts
// up to now; one whose run was cancelled or interrupted keeps no span (its
// end was not recorded), only its start.
type planTimes struct{ run, wall time.Duration }

// planElapsed measures d's times by the engine clock's now; false if no
// subtask has started.
func planElapsed(d *planner.Plan, now time.Time) (planTimes, bool) {
	type span struct{ from, to time.Time }
	var spans []span
	var first, last time.Time
	for _, s := range d.Subtasks {
		if s.StartedAt == nil {
			continue
		}
		from, to := *s.StartedAt, *s.StartedAt
		switch {
		case s.FinishedAt != nil:
			to = *s.FinishedAt
		case s.Status == planner.InProgress:
			to = now
		}
		if to.After(from) {
			spans = append(spans, span{from, to})
		}
		if first.IsZero() || from.Before(first) {
			first = from
		}
		if to.After(last) {
			last = to
		}
	}
	if first.IsZero() {
		return planTimes{}, false
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from.Compare(b.from) })
	var run time.Duration
	var cur span
	for i, sp := range spans {
		switch {
		case i == 0:
			cur = sp
		case !sp.from.After(cur.to): // overlaps or touches the current one
			if sp.to.After(cur.to) {
				cur.to = sp.to
			}
		default:
			run += cur.to.Sub(cur.from)
			cur = sp
		}
	}
	if len(spans) > 0 {
		run += cur.to.Sub(cur.from)
	}
	return planTimes{run: run, wall: last.Sub(first)}, true
}

// String is the run time, and the wall time when it reads otherwise:
// "4.6s", or "4.6s run · 15s wall" (the progress line).
func (t planTimes) String() string {
	if run, wall, same := t.formatted(); !same {
		return run + " run · " + wall + " wall"
	}
	return formatPlanDuration(t.run)
}

// sentence is the same for the end of a sentence: "in 4.6s", or "in
// 4.6s (15s wall)" (the status line).
func (t planTimes) sentence() string {
	if run, wall, same := t.formatted(); !same {
		return "in " + run + " (" + wall + " wall)"
	}
	return "in " + formatPlanDuration(t.run)
}

// formatted is both times as the tab shows them, and whether they read
// the same.
func (t planTimes) formatted() (run, wall string, same bool) {
	run, wall = formatPlanDuration(t.run), formatPlanDuration(t.wall)
	return run, wall, run == wall
}

// formatPlanDuration is a short duration: 0ms, 350ms, 1.5s, 42s, 2m05s,
// 1h02m.
func formatPlanDuration(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// planGlyphProposed marks a subtask whose action a model chose: in its box,
// and at the head of the line that says so under the walked subtask.
const planGlyphProposed = "◆"

// planGlyphInterrupted marks a plan whose run ended with the engram that
// ran it (a kill, a crash): nothing runs it, r resumes it.
const planGlyphInterrupted = "↯"

// stepMeta is what a subtask's box says on the right of its id: its
// attempts when more than one, and how long it ran.
func stepMeta(s *planner.Subtask, now time.Time) string {
	var parts []string
	if s.Attempts > 1 {
		parts = append(parts, fmt.Sprintf("×%d", s.Attempts))
	}
	if d, ok := stepElapsed(s, now); ok {
		parts = append(parts, formatPlanDuration(d))
	}
	return strings.Join(parts, " ")
}

const (
	// planStageGap is the room between two stages.
	planStageGap = 2
	planMinStage = 18
	planMaxStage = 30
	// planMetaRoom is what a box keeps for its attempts and time ("×3 12.5s").
	planMetaRoom = 9
)

// stageWidth is the width of one stage's column: its longest id and the
// room for a time, within bounds (and within the screen).
func stageWidth(col []*planner.Subtask, room int) int {
	w := planMinStage
	for _, s := range col {
		w = max(w, 3+lineWidth(oneLine(s.ID))+1+planMetaRoom)
	}
	return max(min(w, planMaxStage, room), 8)
}

// stepBox is a subtask's lines in its column, each exactly w wide: its
// status mark, id and time; what it waits for ("← a, b"); and why it
// failed or was skipped.
func (p *plansPane) stepBox(d *planner.Plan, s *planner.Subtask, w int, now time.Time, selected, related, withDesc bool) []string {
	st := p.styles
	// The selected box is marked on its first line; its dependencies and
	// dependents along their whole height.
	gutter, first := " ", " "
	switch {
	case selected:
		first = st.Selected.Render("▸")
	case related:
		gutter = st.Muted.Render("│")
		first = gutter
	}
	meta := stepMeta(s, now)
	// A model chose its action: ◆ after the id, in the accent colour
	// while it waits for approval.
	var chose, choseText string
	if s.Proposed && s.Action != nil {
		choseText = " " + planGlyphProposed
		chose = st.Muted.Render(choseText)
		if s.ApprovedBy == "" && s.Status != planner.Completed {
			chose = st.Prompt.Render(choseText)
		}
	}
	idRoom := max(w-3-lineWidth(meta)-1-lineWidth(choseText), 1)
	id := truncateTo(oneLine(s.ID), idRoom)
	head := p.stepStyle(s.Status, p.stepMark(s.Status)+" "+id)
	if selected {
		head = st.Selected.Render(p.stepMark(s.Status) + " " + id)
	}
	pad := max(w-1-lineWidth(p.stepMark(s.Status)+" "+id+choseText)-lineWidth(meta), 1)
	lines := []string{first + head + chose + strings.Repeat(" ", pad) + st.Muted.Render(meta)}
	if withDesc && s.Description != "" && s.Description != s.ID {
		lines = append(lines, gutter+"  "+truncateTo(oneLine(s.Description), w-3))
	}
	if len(s.Dependencies) > 0 {
		deps := truncateTo("← "+oneLine(strings.Join(s.Dependencies, ", ")), w-3)
		lines = append(lines, gutter+"  "+st.Muted.Render(deps))
	}
	if s.Error != "" {
		// A subtask that ran and failed (skipped under the skip policy
		// too) says why in red; one skipped for a dependency, in grey.
		if s.StartedAt != nil {
			lines = append(lines, gutter+"  "+st.Failed.Render(truncateTo("✗ "+oneLine(s.Error), w-3)))
		} else {
			lines = append(lines, gutter+"  "+st.Muted.Render(truncateTo(skipReason(d, s), w-3)))
		}
	}
	for i, l := range lines {
		lines[i] = fitLine(l, w)
	}
	return lines
}

// skipReason says briefly why a subtask that never started was skipped:
// the dependencies that were skipped or failed (the planner's own words
// otherwise).
func skipReason(d *planner.Plan, s *planner.Subtask) string {
	var with []string
	for _, dep := range s.Dependencies {
		if ds := d.SubtaskByID(dep); ds != nil && (ds.Status == planner.Skipped || ds.Status == planner.Failed) {
			with = append(with, dep)
		}
	}
	if s.Status != planner.Skipped || len(with) == 0 {
		return oneLine(s.Error)
	}
	return "⤼ with " + oneLine(strings.Join(with, ", "))
}

// dagView draws the plan's stages side by side in w columns and h lines,
// from the stage at p.plan.stageOff (kept so that the walked subtask shows).
// Each column scrolls on its own when its boxes do not fit.
func (p *plansPane) dagView(d *planner.Plan, w, h int) []string {
	st := p.styles
	g := p.dagFor(d)
	if g == nil || len(g.stages) == 0 || h <= 0 {
		return nil
	}
	now := p.conn.Now()
	selCol, selRow := -1, -1
	related := map[string]bool{}
	if p.plan.walking {
		selCol, selRow = g.find(p.plan.step)
		if s := d.SubtaskByID(p.plan.step); s != nil {
			for _, dep := range s.Dependencies {
				related[dep] = true
			}
		}
		for _, dep := range g.dependents[p.plan.step] {
			related[dep] = true
		}
	}
	// The stages that fit from the offset; the walked subtask's stays in view.
	room := max(w-1, 8)
	widths := make([]int, len(g.stages))
	for i, col := range g.stages {
		widths[i] = stageWidth(col, room)
	}
	fits := func(from, to int) bool { // stages from..to inclusive
		total := 0
		for i := from; i <= to; i++ {
			total += widths[i]
			if i > from {
				total += planStageGap
			}
		}
		return total <= room
	}
	p.plan.stageOff = max(min(p.plan.stageOff, len(g.stages)-1), 0)
	if selCol >= 0 {
		if selCol < p.plan.stageOff {
			p.plan.stageOff = selCol
		}
		for selCol > p.plan.stageOff && !fits(p.plan.stageOff, selCol) {
			p.plan.stageOff++
		}
	}
	last := p.plan.stageOff
	for last+1 < len(g.stages) && fits(p.plan.stageOff, last+1) {
		last++
	}
	// Room to spare goes to the stages shown, for longer lines.
	used := planStageGap * (last - p.plan.stageOff)
	for i := p.plan.stageOff; i <= last; i++ {
		used += widths[i]
	}
	if spare := room - used; spare > 0 {
		n := last - p.plan.stageOff + 1
		for i := p.plan.stageOff; i <= last; i++ {
			widths[i] += max(min(spare/n, planMaxStage+6-widths[i]), 0)
		}
	}
	// The header: each stage's number, and what is out of view.
	var head strings.Builder
	head.WriteString(" ")
	for i := p.plan.stageOff; i <= last; i++ {
		label := fmt.Sprintf("stage %d", i+1)
		if i == p.plan.stageOff && i > 0 {
			label = fmt.Sprintf("◂ %d more · stage %d", i, i+1)
		}
		if i == last && last < len(g.stages)-1 {
			more := fmt.Sprintf(" · %d more ▸", len(g.stages)-1-last)
			label = truncateTo(label, widths[i]-lineWidth(more)) + more
		}
		head.WriteString(st.Muted.Render(fitLine(truncateTo(label, widths[i]), widths[i])))
		if i < last {
			head.WriteString(strings.Repeat(" ", planStageGap))
		}
	}
	out := []string{strings.TrimRight(head.String(), " ")}
	rows := h - 1
	// The roomiest drawing that fits: boxes with their descriptions and a
	// line between them, then without the lines, then without the
	// descriptions.
	type column struct {
		boxes [][]string
		sel   int
	}
	layout := func(withDesc, gaps bool) ([]column, bool) {
		cols := make([]column, 0, last-p.plan.stageOff+1)
		fitsAll := true
		for i := p.plan.stageOff; i <= last; i++ {
			c := column{sel: -1}
			height := 0
			for r, s := range g.stages[i] {
				box := p.stepBox(d, s, widths[i], now, i == selCol && r == selRow, related[s.ID], withDesc)
				if gaps && r < len(g.stages[i])-1 {
					box = append(box, strings.Repeat(" ", widths[i]))
				}
				c.boxes = append(c.boxes, box)
				height += len(box)
				if i == selCol && r == selRow {
					c.sel = r
				}
			}
			fitsAll = fitsAll && height <= rows
			cols = append(cols, c)
		}
		return cols, fitsAll
	}
	var laid []column
	for _, v := range []struct{ desc, gaps bool }{{true, true}, {true, false}, {false, true}, {false, false}} {
		var ok bool
		if laid, ok = layout(v.desc, v.gaps); ok {
			break
		}
	}
	cols := make([][]string, 0, len(laid))
	for i, c := range laid {
		cols = append(cols, scrollColumn(c.boxes, rows, c.sel, widths[p.plan.stageOff+i], st.Muted.Render))
	}
	for r := 0; r < rows; r++ {
		var b strings.Builder
		b.WriteString(" ")
		empty := true
		for c, col := range cols {
			cell := strings.Repeat(" ", widths[p.plan.stageOff+c])
			if r < len(col) {
				cell, empty = col[r], false
			}
			b.WriteString(cell)
			if c < len(cols)-1 {
				b.WriteString(strings.Repeat(" ", planStageGap))
			}
		}
		if empty {
			break
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	return out
}

// scrollColumn fits a column's boxes in rows: from the top, or from the
// first box that keeps the selected one (sel, -1 for none) in view; a line
// above and below says how many boxes are out of view.
func scrollColumn(boxes [][]string, rows, sel, w int, muted func(...string) string) []string {
	total := 0
	for _, b := range boxes {
		total += len(b)
	}
	if total <= rows || rows < 3 {
		var all []string
		for _, b := range boxes {
			all = append(all, b...)
		}
		return all[:min(len(all), max(rows, 0))]
	}
	note := func(text string) string { return fitLine(muted(text), w) }
	render := func(first int) ([]string, int) {
		var out []string
		if first > 0 {
			out = append(out, note(fmt.Sprintf("  ↑ %d more", first)))
		}
		i := first
		for ; i < len(boxes); i++ {
			reserve := 0
			if i < len(boxes)-1 {
				reserve = 1 // the line saying what is below
			}
			if len(out)+len(boxes[i])+reserve > rows {
				break
			}
			out = append(out, boxes[i]...)
		}
		if i == first && i < len(boxes) {
			// A box taller than the room: its first lines.
			room := rows - len(out) - 1
			out = append(out, boxes[i][:max(min(room, len(boxes[i])), 0)]...)
			i++
		}
		if i < len(boxes) {
			out = append(out, note(fmt.Sprintf("  ↓ %d more", len(boxes)-i)))
		}
		return out, i
	}
	for first := 0; first < sel; first++ {
		if out, end := render(first); sel < end {
			return out
		}
	}
	out, _ := render(max(sel, 0))
	return out
}
