package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/engram-console/engram/planner"
)

// View renders the pane: the list above the selected plan, or beside it on
// a wide screen; a prompt, when open, at the bottom.
func (p *plansPane) View() string {
	if p.width <= 0 || p.height <= 0 {
		return ""
	}
	over := p.promptLines(p.width)
	h := max(p.height-len(over), 0)
	var body string
	if p.split() {
		lw := p.listWidth()
		pw := p.width - lw - 1
		left := strings.Split(fit(joinLines(p.listView(lw, h)), lw, h), "\n")
		right := strings.Split(fit(joinLines(p.planView(pw, h)), pw, h), "\n")
		sep := p.styles.Rule.Render("│")
		for i := range left {
			left[i] += sep + right[i]
		}
		body = joinLines(left)
	} else {
		list := p.listView(p.width, h)
		lines := append(list, p.planView(p.width, max(h-len(list), 0))...)
		body = fit(joinLines(lines), p.width, h)
	}
	if len(over) == 0 {
		return body
	}
	if h == 0 {
		return fit(joinLines(over), p.width, p.height)
	}
	return body + "\n" + fit(joinLines(over), p.width, len(over))
}

// listRows is how many plans the list shows at once.
func (p *plansPane) listRows() int {
	if p.split() {
		return max(p.height-len(p.promptLines(p.width))-1, 1)
	}
	// Above the plan: a few rows, so that the DAG keeps most of the screen.
	return max(min(len(p.list.plans), p.height/5, 8), 1)
}

// listView is the title line and the plans (none when there are none:
// the plan's side says what to do).
func (p *plansPane) listView(w, h int) []string {
	s := p.styles
	title := " " + s.Emphasis.Render("Plans")
	if !p.list.loaded || p.list.err != "" {
		return []string{title}
	}
	running := 0
	for _, pl := range p.list.plans {
		if pl.Status == planner.PlanRunning {
			running++
		}
	}
	title += s.Muted.Render(" · " + plural(len(p.list.plans), "plan", "plans"))
	if len(p.list.plans) > 1 {
		title += s.Muted.Render(", newest first")
	}
	if running > 0 {
		title += s.Muted.Render(fmt.Sprintf(" · %d running", running))
	}
	p.list.cursor.setHeight(p.listRows())
	start, _ := p.list.cursor.visible()
	selected := p.list.cursor.Index()
	rows := min(p.listRows(), max(h-1, 0))
	if len(p.list.plans) > rows {
		title += s.Muted.Render(fmt.Sprintf(" · %d-%d of %d", start+1, min(start+rows, len(p.list.plans)), len(p.list.plans)))
	}
	lines := []string{title}
	idW := len("plan") + 2
	for _, pl := range p.list.plans {
		idW = max(idW, min(lineWidth(oneLine(pl.ID))+2, 24))
	}
	const doneW = 8
	statusW := 11
	for _, pl := range p.list.plans {
		// "interrupted" fills 11 columns: the column widens only then,
		// so that the other lists stay as they were.
		statusW = max(statusW, lineWidth(pl.Status)+1)
	}
	goalW := max(w-5-idW-statusW-doneW, 8)
	for i := start; i < min(start+rows, len(p.list.plans)); i++ {
		pl := p.list.plans[i]
		cursor := "   "
		if i == selected && p.plan.walking {
			cursor = " " + s.Muted.Render("▸ ")
		} else if i == selected {
			cursor = " " + s.Selected.Render("▸ ")
		}
		mark := p.planStyle(pl.Status, p.planMark(pl.Status))
		id := fitLine(truncateTo(oneLine(pl.ID), idW-2), idW)
		goal := fitLine(truncateTo(oneLine(pl.Goal), goalW-2), goalW)
		if i == selected && !p.plan.walking {
			id, goal = s.Selected.Render(id), s.Selected.Render(goal)
		}
		status := p.planStyle(pl.Status, fitLine(pl.Status, statusW))
		done := s.Muted.Render(fmt.Sprintf("%d/%d", pl.Progress.Completed, pl.Progress.Total))
		lines = append(lines, strings.TrimRight(cursor+mark+" "+id+goal+status+done, " "))
	}
	return lines
}

// planView is the selected plan: its header, progress and DAG, and the
// walked subtask's details.
func (p *plansPane) planView(w, h int) []string {
	s := p.styles
	if h <= 0 {
		return nil
	}
	switch {
	case p.list.absent:
		return append([]string{""}, p.wrapped(s.Failed.Render("✗ This engram has no planner: "+oneLine(p.list.err)), w, 6)...)
	case p.list.err != "":
		return append([]string{""}, p.wrapped(s.Failed.Render("✗ Could not list the plans: "+oneLine(p.list.err)), w, 6)...)
	case !p.list.loaded:
		return []string{"", s.Muted.Render(" Loading…")}
	case len(p.list.plans) == 0:
		lines := append([]string{"", s.Muted.Render(" No plans yet.")},
			p.wrapped(s.Muted.Render("d decomposes a goal into one (with a language model), f reads one from a YAML file, or write one from the palette:"), w, 3)...)
		return append(lines, p.wrapped(`:plan.create {"goal": "Prepare breakfast", "subtasks": [{"id": "toast", "action": {"name": "sleep", "args": {"ms": 1500}}}, {"id": "coffee", "dependencies": ["toast"], "action": {"name": "sleep", "args": {"ms": 1000}}}]}`, w, 4)...)
	}
	d := p.shown()
	sum := p.current()
	if d == nil {
		return []string{p.planRule(sum.ID, sum.Goal, w), s.Muted.Render(" Loading " + oneLine(sum.ID) + "…")}
	}
	lines := []string{p.planRule(d.ID, d.Goal, w), p.planMeta(d), p.progressLine(d, w)}
	if stopped(d.Status) && !p.plan.walking && !p.isRunning(d.ID) {
		// What works after a failure, without a model (issue 14): the
		// footer has room for two keys only.
		lines = append(lines, p.wrapped(s.Muted.Render("x runs it again with a policy · r resumes what is pending · enter, then t retries, s skips or m marks done a subtask"), w, 2)...)
	}
	if p.notice.text != "" && p.notice.plan == d.ID {
		text := "✓ " + oneLine(p.notice.text)
		if p.notice.isErr {
			text = s.Failed.Render("✗ " + oneLine(p.notice.text))
		}
		lines = append(lines, p.wrapped(text, w, 4)...)
	}
	var detail []string
	if p.plan.walking {
		detail = p.stepDetail(d, w)
	}
	lines = append(lines, "")
	room := h - len(lines) - len(detail)
	if room < 3 {
		detail = nil // a small screen: the DAG first
		room = h - len(lines)
	}
	lines = append(lines, p.dagView(d, w, room)...)
	if len(detail) > 0 {
		lines = append(lines, make([]string, max(h-len(lines)-len(detail), 0))...)
		lines = append(lines, detail...)
	}
	return lines
}

// planRule is the plan's title in a rule: "── id · goal ────".
func (p *plansPane) planRule(id, goal string, w int) string {
	s := p.styles
	head := " " + s.Rule.Render("── ") + s.Emphasis.Render(oneLine(id)) + s.Muted.Render(" · ") + oneLine(goal) + " "
	head = truncateTo(head, max(w-4, 8))
	return head + s.Rule.Render(strings.Repeat("─", max(w-lineWidth(head)-1, 0)))
}

// planMeta says how the plan stands and how it was made and run.
func (p *plansPane) planMeta(d *planner.Plan) string {
	s := p.styles
	parts := []string{p.planStyle(d.Status, p.planMark(d.Status)+" "+d.Status)}
	if d.Status == planner.PlanInterrupted {
		// Engram stopped during its run: nothing runs it now (issue 14, bug 1).
		parts[0] += s.Muted.Render(": r resumes it")
	}
	strategy := "written by hand"
	if d.Strategy != "manual" {
		strategy = "decomposed " + d.Strategy
		if d.Provider != "" {
			strategy += " by " + d.Provider
		}
	}
	parts = append(parts, s.Muted.Render(oneLine(strategy)))
	if st := d.Settings; st != nil {
		how := fmt.Sprintf("on failure %s, %d at once", oneLine(st.OnSubtaskFailure), st.MaxConcurrent)
		if st.OnSubtaskFailure == "retry" {
			how = fmt.Sprintf("on failure retry ×%d then %s, %d at once", st.MaxRetries, oneLine(st.Fallback), st.MaxConcurrent)
		}
		parts = append(parts, s.Muted.Render(how))
	}
	if d.ReplanCount > 0 {
		parts = append(parts, s.Muted.Render(fmt.Sprintf("replanned %d of %d", d.ReplanCount, d.MaxReplans)))
	}
	parts = append(parts, s.Muted.Render("created "+d.CreatedAt.Format("2006-01-02 15:04")))
	return " " + strings.Join(parts, s.Muted.Render(" · "))
}

// progressLine is the bar of completed subtasks, and the counts.
func (p *plansPane) progressLine(d *planner.Plan, w int) string {
	s := p.styles
	c := d.Count()
	var parts []string
	parts = append(parts, fmt.Sprintf("%d of %d completed", c.Completed, c.Total))
	for _, n := range []struct {
		n    int
		what string
	}{{c.InProgress, "running"}, {c.Failed, "failed"}, {c.Skipped, "skipped"}, {c.Pending, "pending"}} {
		if n.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n.n, n.what))
		}
	}
	if t, ok := planElapsed(d, p.conn.Now()); ok {
		parts = append(parts, t.String())
	}
	text := strings.Join(parts, " · ")
	// The bar (its width counts its percentage) gives room to the
	// counts and times, down to 12 columns, when they would not fit.
	p.bar.Width = max(min(w/3, 40, w-3-lineWidth(text)), 12)
	percent := 0.0
	if c.Total > 0 {
		percent = float64(c.Completed) / float64(c.Total)
	}
	return " " + p.bar.ViewAs(percent) + "  " + s.Muted.Render(text)
}

// stepDetail is the walked subtask: status, attempts and times; its
// description and action; what it waits for and what waits for it; its
// result or error.
func (p *plansPane) stepDetail(d *planner.Plan, w int) []string {
	s := p.styles
	st := d.SubtaskByID(p.plan.step)
	if st == nil {
		return nil
	}
	g := p.dagFor(d)
	status := st.Status
	if st.Status != planner.Pending {
		status = p.stepMark(st.Status) + " " + status
	}
	head := s.Selected.Render("▸ "+oneLine(st.ID)) + s.Muted.Render(" · ") + p.stepStyle(st.Status, status)
	if st.Attempts > 0 {
		head += s.Muted.Render(" · " + plural(st.Attempts, "attempt", "attempts"))
	}
	if st.StartedAt != nil {
		span := st.StartedAt.Format("15:04:05.000")
		if st.FinishedAt != nil {
			span += " → " + st.FinishedAt.Format("15:04:05.000")
		}
		head += s.Muted.Render(" · " + span)
	}
	if el, ok := stepElapsed(st, p.conn.Now()); ok {
		head += s.Muted.Render(" · " + formatPlanDuration(el))
	}
	lines := []string{s.Rule.Render(strings.Repeat("─", w)), " " + head}
	if st.Description != "" && st.Description != st.ID {
		lines = append(lines, "   "+truncateTo(oneLine(st.Description), w-4))
	}
	what := "llm.complete with its description"
	if st.Action != nil && st.Action.Name != "" {
		what = st.Action.Name
		if len(st.Action.Args) > 0 && string(st.Action.Args) != "null" {
			what += " " + string(st.Action.Args)
		}
	}
	links := s.Muted.Render("runs ") + oneLine(what)
	if len(st.Dependencies) > 0 {
		links += s.Muted.Render(" · after ") + oneLine(strings.Join(st.Dependencies, ", "))
	}
	if next := g.dependents[st.ID]; len(next) > 0 {
		links += s.Muted.Render(" · before ") + oneLine(strings.Join(next, ", "))
	}
	lines = append(lines, "   "+truncateTo(links, w-4))
	if st.Proposed && st.Action != nil {
		lines = append(lines, "   "+p.provenance(d, st, w-4))
	}
	if st.Warning != "" {
		// A model proposed an action engram refused to run: the person
		// should see what was asked for instead of trusting the plan.
		lines = append(lines, "   "+s.Failed.Render(truncateTo("⚠ "+oneLine(st.Warning), w-4)))
	}
	switch {
	case st.Redacted:
		lines = append(lines, "   "+s.Muted.Render(truncateTo("result hidden: only the plan's owner and the agent it ran as see it", w-4)))
	case st.Error != "":
		lines = append(lines, "   "+s.Failed.Render(truncateTo("✗ "+oneLine(st.Error), w-4)))
	case len(st.Result) > 0:
		lines = append(lines, "   "+s.Muted.Render("result ")+truncateTo(oneLine(string(st.Result)), w-11))
	}
	return lines
}

// provenance says, in one line of w columns, that a model chose st's
// action and whether a person approved it (issue 13, item 1).
func (p *plansPane) provenance(d *planner.Plan, st *planner.Subtask, w int) string {
	s := p.styles
	text := planGlyphProposed + " the model chose this action"
	switch {
	case st.ApprovedBy != "":
		return s.Muted.Render(truncateTo(text+" · approved by "+oneLine(st.ApprovedBy), w))
	case st.Status != planner.Completed:
		again := "x"
		if d.Status == planner.PlanCancelled || d.Status == planner.PlanInterrupted {
			again = "r"
		}
		return s.Prompt.Render(truncateTo(text+" · not approved yet: "+again+" asks before it runs", w))
	case st.Warning != "":
		return s.Muted.Render(truncateTo(text+" · nobody approved it", w)) // the warning says what ran
	}
	// A run that did not ask (a batch script, the palette) ran it.
	return s.Muted.Render(truncateTo(text+" · it ran without approval (proposed_actions run)", w))
}

// planAskIDMax is the widest id the question pads the others to, so that
// the actions line up; a longer id is shown whole, unpadded.
const planAskIDMax = 20

// askLayout is the question's list of actions laid out for the pane: every
// action's lines in full, and how many of them show at once.
type askLayout struct {
	body []string // every line of every action
	of   []int    // the action (index in the question's list) of each line
	rows int      // how many lines of body show at once
	// scrolls: body is longer than rows, and a line says where the
	// person is; rule and note: the title and the note fit.
	scrolls, rule, note bool
}

// maxOff is the first line shown once scrolled to the end.
func (l askLayout) maxOff() int { return max(len(l.body)-l.rows, 0) }

// off is off within the scroll (the pane may have grown since).
func (l askLayout) off(off int) int { return max(min(off, l.maxOff()), 0) }

// showing is the first and last action (from 1) with a line on screen
// when the list starts at off.
func (l askLayout) showing(off int) (first, last int) {
	if len(l.body) == 0 {
		return 0, 0
	}
	off = l.off(off)
	end := min(off+l.rows, len(l.body)) - 1
	return l.of[off] + 1, l.of[end] + 1
}

// askLayout lays out the open question at width w. It takes at most two
// thirds of the pane (all of a small one), so that the plan stays in view;
// what does not fit scrolls.
func (p *plansPane) askLayout(w int) askLayout {
	l := askLayout{rule: true, note: true}
	l.body, l.of = p.askBody(p.approve.Payload().chosen, w)
	budget := max(p.height*2/3, min(p.height, 6))
	rows := budget - 3 // the rule, the note and the question
	if len(l.body) > rows {
		l.scrolls = true
		rows-- // the line that says where the person is
	}
	if rows < 1 {
		l.note, rows = false, rows+1
	}
	if rows < 1 {
		l.rule, rows = false, rows+1
	}
	l.rows = max(rows, 1)
	return l
}

// askBody is every chosen action in full: its id and action name, then
// its args JSON, on one line when it fits in w, else the args wrapped
// below, indented, over as many lines as they need. Nothing is cut: y
// approves the actions whole (issue 13, item 1).
func (p *plansPane) askBody(chosen []*planner.Subtask, w int) (lines []string, of []int) {
	s := p.styles
	idW := 0
	for _, st := range chosen {
		if n := lineWidth(oneLine(st.ID)); n <= planAskIDMax {
			idW = max(idW, n)
		}
	}
	const indent, argsIndent = "   ", "     "
	for i, st := range chosen {
		id := oneLine(st.ID)
		if lineWidth(id) < idW {
			id = fitLine(id, idW)
		}
		name, args := "", ""
		if st.Action != nil {
			name, args = oneLine(st.Action.Name), oneLine(compactArgs(st.Action.Args))
		}
		head := s.Emphasis.Render(id) + "  " + name
		one := indent + head
		if args != "" {
			one += " " + s.Muted.Render(args)
		}
		block := []string{one}
		if lineWidth(one) > w-1 {
			block = nil
			for _, l := range hardLines(head, w-1-len(indent)) {
				block = append(block, indent+l)
			}
			if args != "" {
				for _, l := range hardLines(args, w-1-len(argsIndent)) {
					block = append(block, argsIndent+s.Muted.Render(l))
				}
			}
		}
		for _, l := range block {
			lines, of = append(lines, l), append(of, i)
		}
	}
	return lines, of
}

// hardLines breaks s into lines of w columns at most, anywhere (JSON has
// few spaces), keeping every character: spaces included.
func hardLines(s string, w int) []string {
	return strings.Split(ansi.Hardwrap(s, max(w, 1), true), "\n")
}

// approveLines is the question asked before running a plan that holds
// actions a model chose: each one in full (id, action and args), scrolled
// when they do not all fit, where the person is, then y/n.
func (p *plansPane) approveLines(w int, rule func(string) string) []string {
	s := p.styles
	l := p.askLayout(w)
	r := p.approve.Payload()
	var lines []string
	if l.rule {
		title := "The model chose these actions for " + oneLine(r.plan)
		if len(r.chosen) == 1 {
			title = "The model chose this action for " + oneLine(r.plan)
		}
		lines = append(lines, rule(title))
	}
	off := l.off(p.ask.off)
	lines = append(lines, l.body[off:min(off+l.rows, len(l.body))]...)
	if l.scrolls {
		first, last := l.showing(off)
		where := fmt.Sprintf("actions %d–%d of %d", first, last, len(r.chosen))
		switch {
		case off < l.maxOff() && !p.ask.seen:
			where += " · ↓ more · y once you have read to the end"
		case off < l.maxOff():
			where += " · ↓ more"
		default:
			where += " · the end"
		}
		lines = append(lines, "   "+s.Prompt.Render(truncateTo(where, w-4)))
	}
	if l.note {
		lines = append(lines, "   "+s.Muted.Render(truncateTo("they run only if you say so; y records "+oneLine(p.conn.Agent())+" as approving them", w-4)))
	}
	return append(lines, p.approve.View(s, w))
}

// compactArgs is an action's args on one line ("" for none).
func compactArgs(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// wrapped word-wraps text (already styled) to w, indented by one column,
// in at most n lines.
func (p *plansPane) wrapped(text string, w, n int) []string {
	lines := strings.Split(wrap(text, max(w-2, 8), " "), "\n")
	if len(lines) > n {
		lines = lines[:n]
		lines[n-1] = truncateTo(lines[n-1]+" …", w-1)
	}
	return lines
}

// promptLines is the open prompt: the goal to decompose, the YAML file to
// read, or the choices of a run.
func (p *plansPane) promptLines(w int) []string {
	s := p.styles
	rule := func(title string) string {
		head := " " + s.Rule.Render("── ") + s.Emphasis.Render(title) + " "
		head = truncateTo(head, max(w-2, 4))
		return head + s.Rule.Render(strings.Repeat("─", max(w-lineWidth(head)-1, 0)))
	}
	if p.approve.Active() {
		return p.approveLines(w, rule)
	}
	if p.sure.Active() {
		return p.sure.ViewRuled(p.styles, w)
	}
	var lines []string
	switch p.prompt.kind {
	case promptNone:
		return nil
	case promptExecute:
		id := oneLine(p.currentID())
		var opts []string
		for i, pol := range planner.Policies {
			if i == p.prompt.policy {
				opts = append(opts, s.Selected.Render("["+pol+"]"))
			} else {
				opts = append(opts, " "+pol+" ")
			}
		}
		policy := planner.Policies[p.prompt.policy]
		lines = append(lines, rule("Execute "+id),
			" "+s.Muted.Render("if a subtask fails: ")+strings.Join(opts, " ")+s.Muted.Render("   at once: ")+s.Selected.Render(fmt.Sprint(p.prompt.atOnce)),
			" "+s.Muted.Render(truncateTo(policy+": "+planPolicyHelp[policy], w-2)))
		if d := p.shown(); d != nil && d.Count().Failed > 0 {
			// What the policy does to the failures already there (issue
			// 14, bug 3).
			lines = append(lines, " "+s.Muted.Render(truncateTo("the failed subtasks now: "+planPolicyOnFailed[policy], w-2)))
		}
		return lines
	case promptNote:
		lines = append(lines, rule("Mark "+oneLine(p.prompt.step)+" done by hand"), strings.TrimRight(" "+p.prompt.input.View(), " "),
			" "+s.Muted.Render(truncateTo("the note is recorded as its result; then the plan goes on", w-2)))
	case promptNoModel:
		lines = append(lines, rule("Decompose a goal into a plan"))
		lines = append(lines, p.wrapped(s.Failed.Render("✗ This needs a language model, and engram runs without one: start it with --llm ollama or --llm openai (and --model NAME)."), w, 3)...)
		lines = append(lines, p.wrapped(s.Muted.Render("Without a model: f reads a plan from a YAML file, or :plan.create writes one."), w, 2)...)
		return lines
	case promptGoal:
		var opts []string
		for i, st := range planner.Strategies {
			if i == p.prompt.strategy {
				opts = append(opts, s.Selected.Render("["+st+"]"))
			} else {
				opts = append(opts, " "+st+" ")
			}
		}
		lines = append(lines, rule("Decompose a goal into a plan"), strings.TrimRight(" "+p.prompt.input.View(), " "),
			" "+s.Muted.Render("strategy: ")+strings.Join(opts, " ")+s.Muted.Render("  (tab changes; the model breaks the goal into subtasks)"))
	case promptFile:
		lines = append(lines, rule("Create a plan from a YAML file"), strings.TrimRight(" "+p.prompt.input.View(), " "),
			" "+s.Muted.Render("the file holds plan.create's fields: goal, subtasks (id, description, dependencies, action), state"))
	}
	switch {
	case p.prompt.waiting():
		lines = append(lines, " "+p.spinner.View()+s.Muted.Render(" "+oneLine(p.prompt.busyWhat)+" (esc stops waiting)"))
	case p.prompt.err != "":
		lines = append(lines, p.wrapped(s.Failed.Render("✗ "+oneLine(p.prompt.err)), w, 4)...)
	}
	return lines
}
