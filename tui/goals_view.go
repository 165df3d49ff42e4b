package tui

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/engram-console/engram/core/cortex"
)

// detailFields are the fields the detail shows, in order (custom ones go
// after parent).
var detailFields = []string{"title", "description", "status", "priority", "progress", "due_at", "blocking", "tags", "org", "parent"}

// View renders the pane: the list, the open item, or both side by side.
func (p *goalsPane) View() string {
	if p.width <= 0 || p.height <= 0 {
		return ""
	}
	if p.split() {
		lw := p.leftWidth()
		rw := p.width - lw - 1
		left := strings.Split(fit(p.listView(lw), lw, p.height), "\n")
		var right []string
		if p.open.id == "" {
			over := p.overlay()
			hint := fit(p.styles.Muted.Render("\n Move the cursor (↑/↓) to show an item here; enter works on it."), rw, max(p.height-len(over), 0))
			right = strings.Split(fit(strings.TrimPrefix(hint+"\n"+joinLines(over), "\n"), rw, p.height), "\n")
		} else {
			right = strings.Split(fit(p.itemView(), rw, p.height), "\n")
		}
		sep := p.styles.Rule.Render("│")
		for i := range left {
			left[i] += sep + right[i]
		}
		return joinLines(left)
	}
	if p.level == levelList {
		// A form or question opened from the list shows under it.
		over := p.overlay()
		body := fit(p.listView(p.width), p.width, max(p.height-len(over), 0))
		if len(over) == 0 {
			return body
		}
		if body == "" {
			return fit(joinLines(over), p.width, p.height)
		}
		return body + "\n" + joinLines(over)
	}
	return fit(p.itemView(), p.width, p.height)
}

// --- the list ---

// listColumn is one column of the list.
type listColumn struct {
	title string
	width int
	cell  func(it *cortex.Item) string // plain text; styled by style
	style func(it *cortex.Item, text string) string
}

// listHeaderRows is how many lines the list has above its rows.
func (p *goalsPane) listHeaderRows() int {
	if p.list.editing {
		return 3
	}
	return 2
}

// listRows is how many items the list shows at once.
func (p *goalsPane) listRows() int {
	over := 0
	if p.level == levelList && !p.split() {
		over = len(p.overlay())
	}
	return max(p.height-p.listHeaderRows()-over, 1)
}

// overlayWidth is the width of a form or question: the item's, or the
// whole pane's under the list.
func (p *goalsPane) overlayWidth() int {
	if p.level == levelList && !p.split() {
		return p.width
	}
	return p.itemWidth()
}

func (p *goalsPane) listView(w int) string {
	s := p.styles
	l := &p.list
	var lines []string
	if l.editing {
		lines = append(lines, strings.TrimRight(" "+l.input.View(), " "),
			s.Muted.Render(" status:active,blocked|all  tag:x #x  type:goal  pri:high  owner:x  words of the title"))
	} else {
		lines = append(lines, p.listTitle())
	}
	switch {
	case l.filter.err != "":
		return joinLines(append(lines, "", s.Failed.Render(" "+glyphFailed+" "+l.filter.err), s.Muted.Render(" / edits the filter, esc clears it.")))
	case l.err != "":
		return joinLines(append(lines, "", s.Failed.Render(" "+glyphFailed+" Could not list the items: "+oneLine(l.err))))
	case !l.loaded:
		return joinLines(append(lines, "", s.Muted.Render(" Loading"+glyphEllipsis)))
	case len(l.items) == 0 && l.filter.raw != "":
		return joinLines(append(lines, "", s.Muted.Render(" Nothing matches "+l.filter.raw+". / edits the filter, esc clears it.")))
	case len(l.items) == 0:
		return joinLines(append(lines, "",
			s.Muted.Render(" No open goals, actions or questions. ")+s.Prompt.Render("n")+s.Muted.Render(" creates a goal."),
			s.Muted.Render(" (From the palette: :cortex.create {\"type\": \"goal\", \"fields\": {\"title\": \"Ship v1\"}})")))
	}
	cols, titleW := p.listColumns(w)
	var head strings.Builder
	head.WriteString("   ")
	for _, c := range cols {
		width := c.width
		if c.title == "title" {
			width = titleW
		}
		head.WriteString(fitLine(c.title, width))
	}
	lines = append(lines, s.Muted.Render(strings.TrimRight(head.String(), " ")))
	l.cursor.setHeight(p.listRows())
	start, end := l.cursor.visible()
	if len(l.items) > l.cursor.Height() && !l.editing {
		lines[0] += s.Muted.Render(fmt.Sprintf(" · %d-%d", start+1, end))
	}
	for i := start; i < end; i++ {
		lines = append(lines, p.listRow(l.items[i], cols, titleW, i == l.cursor.Index()))
	}
	return joinLines(lines)
}

func (p *goalsPane) listTitle() string {
	s := p.styles
	l := &p.list
	what := "open item"
	if l.filter.all || len(l.filter.q.Status) > 0 {
		what = "item"
	}
	if l.deleted {
		what = "item"
	}
	n := l.count
	if l.filter.err != "" || l.err != "" || !l.loaded {
		if l.filter.raw == "" {
			return " " + s.Emphasis.Render("Goals")
		}
		return " " + s.Emphasis.Render("Goals") + s.Muted.Render(" · filter ") + l.filter.raw
	}
	text := " " + s.Emphasis.Render("Goals") + s.Muted.Render(" · "+plural(n, what, what+"s"))
	if n > len(l.items) {
		text += s.Muted.Render(fmt.Sprintf(" (the first %d shown)", len(l.items)))
	}
	if l.deleted {
		text += s.Muted.Render(", deleted ones too (d hides them)")
	}
	if l.filter.raw != "" {
		return text + s.Muted.Render(" matching ") + l.filter.raw + s.Muted.Render(" · esc clears")
	}
	if l.loaded && n > 0 {
		text += s.Muted.Render(", most urgent first · ! blocking")
	}
	return text
}

// listColumns chooses the columns that fit w: the title gets what is left,
// and the optional columns go, least useful first, when it would get too
// little.
func (p *goalsPane) listColumns(w int) ([]listColumn, int) {
	s := p.styles
	now := p.conn.Now()
	tagsW := len("tags") + 1
	idW := len("id") + 1
	for _, it := range p.list.items {
		tagsW = max(tagsW, min(lineWidth(strings.Join(it.Tags, ","))+2, 22))
		idW = max(idW, min(lineWidth(it.ID)+2, 28))
	}
	dueW := 13
	if slices.ContainsFunc(p.list.items, func(it *cortex.Item) bool { return isLate(it, now) }) {
		dueW += len(" late")
	}
	plain := func(_ *cortex.Item, t string) string { return t }
	muted := func(_ *cortex.Item, t string) string { return s.Muted.Render(t) }
	all := []listColumn{
		{title: "priority", width: 9, cell: func(it *cortex.Item) string { return it.Priority }, style: func(it *cortex.Item, t string) string {
			switch it.Priority {
			case "critical":
				return s.Failed.Render(t)
			case "high":
				return s.Emphasis.Render(t)
			case "low":
				return s.Muted.Render(t)
			}
			return t
		}},
		{title: "", width: 2, cell: func(it *cortex.Item) string {
			if it.Blocking {
				return "!"
			}
			return ""
		}, style: func(_ *cortex.Item, t string) string { return s.Failed.Render(t) }},
		{title: "title", cell: func(it *cortex.Item) string {
			// A child sits under its parent, indented.
			if d := p.list.depth[it.ID]; d > 0 {
				return strings.Repeat("  ", d-1) + glyphChild + oneLine(it.Title)
			}
			return oneLine(it.Title)
		}, style: plain},
		{title: "type", width: 9, cell: func(it *cortex.Item) string { return it.Type }, style: muted},
		{title: "status", width: 12, cell: func(it *cortex.Item) string {
			if it.DeletedAt != nil {
				return "deleted"
			}
			return it.Status
		}, style: func(it *cortex.Item, t string) string {
			switch {
			case it.DeletedAt != nil:
				return s.Failed.Render(t)
			}
			switch it.Status {
			case "blocked":
				return s.Failed.Render(t)
			case "completed":
				return s.OK.Render(t)
			case "archived":
				return s.Muted.Render(t)
			}
			return t
		}},
		{title: "done", width: 5, cell: func(it *cortex.Item) string { return fmt.Sprintf("%3d%%", it.Progress) }, style: muted},
		{title: "due", width: dueW, cell: func(it *cortex.Item) string {
			if it.DueAt == nil {
				return glyphNone
			}
			text := it.DueAt.Format("Jan 02 15:04")
			if it.DueAt.Year() != now.Year() {
				text = it.DueAt.Format("2006-01-02")
			}
			if isLate(it, now) {
				text += " late"
			}
			return text
		}, style: func(it *cortex.Item, t string) string {
			if isLate(it, now) {
				return s.Failed.Render(t)
			}
			return t
		}},
		{title: "tags", width: tagsW, cell: func(it *cortex.Item) string { return strings.Join(it.Tags, ",") }, style: muted},
		{title: "ver", width: 4, cell: func(it *cortex.Item) string { return fmt.Sprintf("v%d", it.GlobalVersion) }, style: muted},
		{title: "id", width: idW, cell: func(it *cortex.Item) string { return it.ID }, style: muted},
	}
	// A column nobody has a value for only takes room.
	anyDue := slices.ContainsFunc(p.list.items, func(it *cortex.Item) bool { return it.DueAt != nil })
	anyTags := slices.ContainsFunc(p.list.items, func(it *cortex.Item) bool { return len(it.Tags) > 0 })
	all = slices.DeleteFunc(all, func(c listColumn) bool { return (c.title == "due" && !anyDue) || (c.title == "tags" && !anyTags) })
	// The optional columns, the first to go first.
	optional := []string{"id", "done", "tags", "type"}
	const minTitle = 28
	used := func(cols []listColumn) int {
		n := 3 // the cursor
		for _, c := range cols {
			n += c.width
		}
		return n
	}
	cols := all
	for _, drop := range optional {
		if w-used(cols) >= minTitle {
			break
		}
		cols = slices.DeleteFunc(slices.Clone(cols), func(c listColumn) bool { return c.title == drop })
	}
	return cols, max(w-used(cols), 8)
}

func (p *goalsPane) listRow(it *cortex.Item, cols []listColumn, titleW int, current bool) string {
	var b strings.Builder
	if current && p.level != levelList {
		b.WriteString(" " + p.styles.Muted.Render(glyphCursor+" ")) // the open item, which has the keys
	} else if current {
		b.WriteString(" " + p.styles.Selected.Render(glyphCursor+" "))
	} else {
		b.WriteString("   ")
	}
	for _, c := range cols {
		width := c.width
		if c.title == "title" {
			width = titleW
		}
		text := fitLine(truncateTo(c.cell(it), width-1), width) // a column apart from the next
		switch {
		case current && p.level == levelList:
			b.WriteString(p.styles.Selected.Render(text))
		default:
			b.WriteString(c.style(it, text))
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// isLate reports an item past its due date (by the engine's clock) and
// not done: neither completed nor archived nor deleted.
func isLate(it *cortex.Item, now time.Time) bool {
	return it.DueAt != nil && it.DueAt.Before(now) && it.DeletedAt == nil && it.Status != "completed" && it.Status != "archived"
}

// --- the open item ---

// overlay is what the revert question or the form takes at the bottom of
// the item.
func (p *goalsPane) overlay() []string {
	switch {
	case p.confirm.Active():
		return []string{"", p.confirm.View(p.styles, p.itemWidth())}
	case p.remove.Active():
		return []string{"", p.remove.View(p.styles, p.overlayWidth())}
	case p.edit != nil:
		return p.edit.lines()
	case p.form != nil:
		return p.form.lines()
	}
	return nil
}

// timelineWidth is the width of the lineage's timeline column.
func (p *goalsPane) timelineWidth() int { return max(min(p.itemWidth()*2/5, 40), 24) }

// diffWidth is the width of the lineage's diff column.
func (p *goalsPane) diffWidth() int { return max(p.itemWidth()-p.timelineWidth()-3, 1) }

// layoutItem sizes the item's scrolled sections and renders their content:
// call it after anything they show changes.
func (p *goalsPane) layoutItem() {
	w, h := p.itemWidth(), p.height
	over := len(p.overlay())
	detail := &p.open.detail
	detail.setHeight(max(h-3-over, 1))
	detail.setLines(wrapWide(p.detailLines(w), w))
	l := &p.lineage
	l.diff.setHeight(max(h-2-over, 1))
	l.diff.setLines(wrapWide(p.diffLines(p.diffWidth()), p.diffWidth()))
	l.sel.setHeight(l.diff.Height()) // the timeline is as high as the diff
}

// wrapWide wraps the lines wider than w (a narrow screen), so that nothing
// of them is cut off.
func wrapWide(lines []string, w int) []string {
	var out []string
	for _, l := range lines {
		if lineWidth(l) <= w {
			out = append(out, l)
			continue
		}
		out = append(out, strings.Split(wrap(l, w, ""), "\n")...)
	}
	return out
}

// itemView is the open item: its fields, or its lineage.
func (p *goalsPane) itemView() string {
	s := p.styles
	w := p.itemWidth()
	var lines []string
	switch o := &p.open; {
	case o.err != "" && o.item == nil && strings.HasSuffix(o.err, "no longer shared with you."):
		// Not a failure: the owner took the item back.
		lines = []string{" " + s.Emphasis.Render(oneLine(o.err)), "", s.Muted.Render(" Its owner revoked your access. esc goes back to the list.")}
	case o.err != "" && o.item == nil:
		lines = []string{" " + s.Failed.Render(glyphFailed+" "+oneLine(o.err)), "", s.Muted.Render(" esc goes back to the list.")}
	case o.item == nil:
		lines = []string{s.Muted.Render(" Loading " + o.id + glyphEllipsis)}
	case p.level == levelLineage:
		lines = p.lineageView(w)
	default:
		lines = append(p.detailHeader(w), o.detail.viewLines(s)...)
	}
	over := p.overlay()
	body := fit(joinLines(lines), w, max(p.height-len(over), 0))
	if len(over) == 0 {
		return body
	}
	if body == "" {
		return joinLines(over)
	}
	return body + "\n" + joinLines(over)
}

// chainLine says whether the item's audit chain verifies.
func (p *goalsPane) chainLine() string {
	s := p.styles
	l := &p.lineage
	switch {
	case l.err != "":
		return s.Failed.Render(glyphFailed + " no lineage: " + oneLine(l.err))
	case !l.loaded:
		return s.Muted.Render("checking the audit chain" + glyphEllipsis)
	case l.chain.Verified:
		return s.OK.Render(glyphOK + " audit chain verified")
	}
	return s.Failed.Render(fmt.Sprintf("%s audit chain broken at v%d: %s", glyphFailed, l.chain.BrokenAt, oneLine(l.chain.Problem)))
}

func (p *goalsPane) detailHeader(w int) []string {
	s := p.styles
	it := p.open.item
	title := " " + s.Emphasis.Render(oneLine(it.Title))
	if it.DeletedAt != nil {
		title += s.Failed.Render("  (deleted)")
	}
	meta := " " + s.Muted.Render(it.Type+" ") + it.ID + s.Muted.Render(" · ") + fmt.Sprintf("v%d", it.GlobalVersion) +
		s.Muted.Render(" · owner ") + it.Owner + s.Muted.Render(" · ") + p.chainLine()
	if d := &p.open.detail; d.TotalLineCount() > d.Height() {
		// How far down the fields are scrolled.
		done := float64(d.Offset()) / float64(d.TotalLineCount()-d.Height())
		title = fitLine(title, max(w-14, 1)) + s.Muted.Render(fmt.Sprintf("%3.0f%% ↑/↓", done*100))
	}
	return []string{title, meta, ""}
}

// fieldValue is one of the item's fields the way formatValue takes it (as
// JSON decodes a value the audit trail records), so that the detail shows
// values as the lineage does.
func fieldValue(it *cortex.Item, field string) any {
	switch field {
	case "title":
		return it.Title
	case "description":
		return it.Description
	case "status":
		return it.Status
	case "priority":
		return it.Priority
	case "progress":
		return float64(it.Progress)
	case "due_at":
		return timeValue(it.DueAt)
	case "deleted_at":
		return timeValue(it.DeletedAt)
	case "blocking":
		return it.Blocking
	case "tags":
		if it.Tags == nil {
			return nil
		}
		tags := make([]any, len(it.Tags))
		for i, t := range it.Tags {
			tags[i] = t
		}
		return tags
	case "org":
		return it.Org
	case "parent":
		return it.Parent
	}
	if key, ok := strings.CutPrefix(field, "custom."); ok {
		return it.Custom[key]
	}
	return nil
}

// timeValue is a time as JSON writes it (nil for none).
func timeValue(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.Format(time.RFC3339Nano)
}

func (p *goalsPane) detailLines(w int) []string {
	it := p.open.item
	if it == nil {
		return nil
	}
	s := p.styles
	fields := slices.Clone(detailFields)
	for _, k := range slices.Sorted(maps.Keys(it.Custom)) {
		fields = append(fields, "custom."+k)
	}
	fields = append(fields, "deleted_at", "acl")
	fieldW := len("description") + 2
	for _, f := range fields {
		fieldW = max(fieldW, min(len(f)+2, 24))
	}
	const verW = 12
	valueW := max(w-1-fieldW-verW, 10)
	lines := []string{s.Muted.Render(" " + fitLine("field", fieldW) + fitLine("version", verW) + "value")}
	now := p.conn.Now()
	for _, f := range fields {
		vals := formatValue(f, fieldValue(it, f), valueW)
		switch {
		case f == "acl":
			vals = aclLines(it.ACL, it.Owner)
		case f == "description":
			vals = wrapValue(vals[0], valueW, 6)
		case f == "due_at" && isLate(it, now):
			vals[0] += " " + s.Failed.Render("late")
		case f == "blocking" && it.Blocking:
			vals[0] = s.Failed.Render("yes") + s.Muted.Render(" (it holds up other work)")
		}
		// "v2 · in v5": the field's second value, set by the item's v5.
		ver := ""
		if fv, ok := it.FieldVersions[f]; ok {
			ver = fmt.Sprintf("v%d", fv)
			if at := it.FieldChangedAt[f]; at > 1 {
				ver += fmt.Sprintf(" · in v%d", at)
			}
		}
		verStyle := s.Muted
		if it.FieldChangedAt[f] == it.GlobalVersion && it.GlobalVersion > 1 {
			verStyle = s.Emphasis // what the latest version changed
		}
		for i, val := range vals {
			name, vcol := "", ""
			if i == 0 {
				name, vcol = f, ver
			}
			line := " " + s.Muted.Render(fitLine(name, fieldW)) + verStyle.Render(fitLine(vcol, verW)) + truncateTo(val, valueW-1)
			lines = append(lines, strings.TrimRight(line, " "))
		}
	}
	if kids := p.open.children; len(kids) > 0 {
		lines = append(lines, "", s.Muted.Render(" "+plural(len(kids), "child", "children")+" (n adds one)"))
		for _, c := range kids {
			state := c.Status
			if c.DeletedAt != nil {
				state = "deleted"
			} else if isLate(c, now) {
				state += ", late"
			}
			lines = append(lines, truncateTo(" "+glyphChild+oneLine(c.Title)+s.Muted.Render(fmt.Sprintf(" · %s %s · %s · %d%%", c.Type, c.ID, state, c.Progress)), w))
		}
	}
	lines = append(lines, "",
		s.Muted.Render(fmt.Sprintf(" created %s · updated %s", it.CreatedAt.Format("2006-01-02 15:04:05"), it.UpdatedAt.Format("2006-01-02 15:04:05"))),
		s.Muted.Render(" e edit · c complete · D delete · n child · enter lineage · s share · x revoke"))
	return lines
}

func aclLines(acl []cortex.ACLEntry, owner string) []string {
	var out []string
	for _, e := range acl {
		who := e.PrincipalID
		if who == owner {
			who += " (owner)"
		}
		out = append(out, who+": "+strings.Join(e.Permissions, ", "))
	}
	if len(out) == 0 {
		return []string{glyphNone}
	}
	return out
}

// aclValue reads an access list as JSON decodes it ([{principal_id,
// permissions}]), as field changes of the lineage carry it.
func aclValue(v []any) []cortex.ACLEntry {
	var acl []cortex.ACLEntry
	for _, x := range v {
		m, _ := x.(map[string]any)
		e := cortex.ACLEntry{}
		e.PrincipalType, _ = m["principal_type"].(string)
		e.PrincipalID, _ = m["principal_id"].(string)
		perms, _ := m["permissions"].([]any)
		for _, p := range perms {
			if s, ok := p.(string); ok {
				e.Permissions = append(e.Permissions, s)
			}
		}
		acl = append(acl, e)
	}
	return acl
}

// formatValue renders a field's value (as JSON decodes it) for the screen,
// one string per line.
func formatValue(field string, v any, width int) []string {
	switch v := v.(type) {
	case nil:
		return []string{"—"}
	case string:
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil && (field == "due_at" || field == "deleted_at") {
			return []string{formatTime(t)}
		}
		if v == "" {
			return []string{"—"}
		}
		return []string{oneLine(v)}
	case float64:
		if field == "progress" {
			return []string{fmt.Sprintf("%s%%", strconv.FormatFloat(v, 'f', -1, 64))}
		}
		return []string{strconv.FormatFloat(v, 'f', -1, 64)}
	case bool:
		if v {
			return []string{"yes"}
		}
		return []string{"no"}
	case []any:
		if field == "acl" {
			return aclLines(aclValue(v), "")
		}
		var parts []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				parts = append(parts, s)
			} else {
				b, _ := json.Marshal(x)
				parts = append(parts, string(b))
			}
		}
		if len(parts) == 0 {
			return []string{"—"}
		}
		return []string{strings.Join(parts, ", ")}
	}
	b, _ := json.Marshal(v)
	return []string{string(b)}
}

// --- the lineage ---

func (p *goalsPane) lineageView(w int) []string {
	s := p.styles
	it := p.open.item
	l := &p.lineage
	head := " " + s.Emphasis.Render(oneLine(it.Title)) + s.Muted.Render(" · ") + it.ID
	if n := len(l.history); n > 0 {
		head += s.Muted.Render(fmt.Sprintf(" · lineage v1 → v%d", l.history[n-1].NewVersion))
	}
	lines := []string{truncateTo(head, w-lineWidth(p.chainLine())-3) + s.Muted.Render(" · ") + p.chainLine(), ""}
	if !l.loaded {
		return append(lines, s.Muted.Render(" Loading the lineage"+glyphEllipsis))
	}
	if l.err != "" {
		return append(lines, s.Failed.Render(" "+glyphFailed+" "+oneLine(l.err)))
	}
	tw := p.timelineWidth()
	rows := l.diff.Height()
	timeline := p.timelineLines(tw)
	diff := l.diff.viewLines(s)
	sep := s.Rule.Render(glyphVRule)
	for i := range rows {
		var l, r string
		if i < len(timeline) {
			l = timeline[i]
		}
		if i < len(diff) {
			r = diff[i]
		}
		lines = append(lines, fitLine(l, tw)+" "+sep+" "+r)
	}
	return lines
}

// timelineLines is the lineage, v1 at the top, the selected version marked,
// scrolled to keep it in view.
func (p *goalsPane) timelineLines(tw int) []string {
	s := p.styles
	l := &p.lineage
	verW := 0
	if n := len(l.history); n > 0 {
		verW = len(fmt.Sprint(l.history[n-1].NewVersion)) + 1
	}
	var out []string
	start, end := l.sel.visible()
	for i := start; i < end; i++ {
		m := l.history[i]
		node := glyphNode
		if i == len(l.history)-1 {
			node = glyphNodeLast
		}
		ver := fitLine(fmt.Sprintf("v%d", m.NewVersion), verW)
		text := fmt.Sprintf("%s %s %-6s %s", node, ver, m.MutationType, m.MutatedBy)
		if tw >= 34 {
			text = fmt.Sprintf("%s %s %-6s %s %s", node, ver, m.MutationType, m.MutationTimestamp.Format("15:04"), m.MutatedBy)
		}
		text = truncateTo(text, tw-3)
		if i == l.sel.Index() {
			out = append(out, s.Selected.Render(" "+glyphCursor+" "+text))
		} else if m.MutationType == "revert" {
			out = append(out, "   "+s.Prompt.Render(text))
		} else {
			out = append(out, "   "+text)
		}
	}
	return out
}

// diffLines describes the selected version: when, who, in which turn, and
// each field's old and new value.
func (p *goalsPane) diffLines(w int) []string {
	m := p.selected()
	if m == nil {
		return nil
	}
	s := p.styles
	agent := m.AgentID
	if agent == "" {
		agent = m.MutatedBy
	}
	turn := s.Muted.Render("no turn")
	if m.TurnID != "" {
		turn = s.Muted.Render("turn ") + m.TurnID
	}
	out := []string{
		s.Emphasis.Render(fmt.Sprintf("v%d %s", m.NewVersion, m.MutationType)) + s.Muted.Render(" · "+m.MutationTimestamp.Format("2006-01-02 15:04:05")),
		s.Muted.Render("by ") + agent + s.Muted.Render(" · ") + turn,
	}
	if m.MergeApplied {
		out = append(out, s.Prompt.Render("merge applied")+s.Muted.Render(": written over a newer version whose changes were to other fields"))
	}
	if m.Summary != "" {
		out = append(out, s.Muted.Render(oneLine(m.Summary)))
	}
	out = append(out, "")
	fields := slices.Clone(m.ChangedFields)
	if len(fields) == 0 {
		fields = slices.Collect(maps.Keys(m.FieldChanges))
	}
	// In the detail's order: title first, the access list last.
	rank := func(f string) int {
		if i := slices.Index(detailFields, f); i >= 0 {
			return i
		}
		if strings.HasPrefix(f, "custom.") {
			return len(detailFields)
		}
		return len(detailFields) + 1
	}
	slices.SortStableFunc(fields, func(a, b string) int {
		if c := rank(a) - rank(b); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	// A new item's empty fields are noise: say how many there were.
	empty := 0
	nameW := 0
	for _, f := range fields {
		nameW = max(nameW, len(f)+2)
	}
	for _, f := range fields {
		ch := m.FieldChanges[f]
		if m.MutationType == "create" {
			// Every field is new: one line each, its first value.
			if isEmptyValue(ch.New) {
				empty++
				continue
			}
			name := s.Emphasis.Render(fitLine(f, nameW))
			for _, l := range formatValue(f, ch.New, w) {
				for _, part := range strings.Split(wrap(l, max(w-nameW-1, 8), ""), "\n") {
					out = append(out, name+strings.TrimRight(part, " "))
					name = strings.Repeat(" ", nameW)
				}
			}
			continue
		}
		version := "v" + strings.ReplaceAll(ch.Version, "→", "→v")
		if out[len(out)-1] != "" {
			out = append(out, "") // a field apart from the one before
		}
		out = append(out, s.Emphasis.Render(f)+s.Muted.Render("  "+version))
		old := formatValue(f, ch.Old, w)
		neu := formatValue(f, ch.New, w)
		for _, l := range old {
			if f == "acl" && slices.Contains(neu, l) {
				out = append(out, wrapDiff("    ", s.Muted.Render(l), w)...) // unchanged
			} else {
				out = append(out, wrapDiff(s.Failed.Render("  − "), l, w)...)
			}
		}
		for _, l := range neu {
			if f != "acl" || !slices.Contains(old, l) {
				out = append(out, wrapDiff(s.OK.Render("  + "), l, w)...)
			}
		}
	}
	if empty > 0 {
		out = append(out, s.Muted.Render(plural(empty, "empty field", "empty fields")+" not shown"))
	}
	if len(fields) == 0 {
		out = append(out, s.Muted.Render("no field changed"))
	}
	return out
}

// wrapDiff wraps one value line under its − or + mark.
func wrapDiff(mark, text string, w int) []string {
	lines := strings.Split(wrap(text, max(w-5, 8), ""), "\n")
	out := make([]string, len(lines))
	for i, l := range lines {
		if i == 0 {
			out[i] = mark + l
		} else {
			out[i] = "    " + l
		}
	}
	return out
}

func isEmptyValue(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}
