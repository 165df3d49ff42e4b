// Package cortex is the frontal cortex (seed 000): an agent's goals, pending
// actions and questions, versioned field by field, with optimistic
// concurrency that merges updates to different fields, an immutable
// hash-chained audit trail, revert, soft delete, per-item access control,
// indexed queries, and its part in turns (active items in, updates out).
package cortex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
)

// Item types.
var Types = []string{"goal", "action", "question"}

// Priorities, most urgent first (the order of cortex.active).
var Priorities = []string{"critical", "high", "medium", "low"}

// Statuses.
var Statuses = []string{"active", "in_progress", "blocked", "completed", "archived"}

// Permissions an ACL entry may grant.
var Permissions = []string{"read", "write", "delete", "share"}

// Item is a goal, a pending action or a question, as it stands.
type Item struct {
	ID          string         `json:"id"`
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Progress    int            `json:"progress"`
	Priority    string         `json:"priority"`
	Status      string         `json:"status"`
	DueAt       *time.Time     `json:"due_at"`
	Blocking    bool           `json:"blocking"`
	Tags        []string       `json:"tags"`
	Owner       string         `json:"owner"`
	Org         string         `json:"org"`
	Parent      string         `json:"parent"`
	Custom      map[string]any `json:"custom"`
	// GlobalVersion counts the item's mutations (1 at creation).
	GlobalVersion int `json:"global_version"`
	// FieldVersions counts each field's own changes (1 at creation);
	// custom fields are "custom.<key>".
	FieldVersions map[string]int `json:"field_versions"`
	// FieldChangedAt is the global version that last changed each field:
	// what decides whether an update based on an older version conflicts.
	FieldChangedAt map[string]int `json:"field_changed_at"`
	ACL            []ACLEntry     `json:"acl"`
	CreatedAt      time.Time      `json:"created_at"`
	UpdatedAt      time.Time      `json:"updated_at"`
	DeletedAt      *time.Time     `json:"deleted_at"`
}

// ACLEntry grants a principal permissions on an item: an entry of engram's
// one principal model. An item's owner has one too, with every permission.
type ACLEntry = access.Entry

// can reports whether principal holds perm.
func (it *Item) can(principal, perm string) bool {
	for _, e := range it.ACL {
		if e.PrincipalID == principal && slices.Contains(e.Permissions, perm) {
			return true
		}
	}
	return false
}

// readers are the principals that may read the item.
func (it *Item) readers() []string {
	var out []string
	for _, e := range it.ACL {
		if slices.Contains(e.Permissions, "read") {
			out = append(out, e.PrincipalID)
		}
	}
	return out
}

// clone is a deep copy: every field, custom values included, independent
// of it.
func (it *Item) clone() *Item {
	c := *it
	c.DueAt = cloneTime(it.DueAt)
	c.DeletedAt = cloneTime(it.DeletedAt)
	c.Tags = slices.Clone(it.Tags)
	c.FieldVersions = maps.Clone(it.FieldVersions)
	c.FieldChangedAt = maps.Clone(it.FieldChangedAt)
	c.ACL = nil
	for _, e := range it.ACL {
		e.Permissions = slices.Clone(e.Permissions)
		c.ACL = append(c.ACL, e)
	}
	c.Custom = make(map[string]any, len(it.Custom))
	for k, v := range it.Custom {
		c.Custom[k] = cloneJSON(v)
	}
	return &c
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// cloneJSON deep-copies a value decoded from JSON (custom fields).
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(x))
		for k, e := range x {
			c[k] = cloneJSON(e)
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = cloneJSON(e)
		}
		return c
	}
	return v // string, float64, bool, nil: immutable
}

// fieldLimits bound the text fields, in bytes: an item is read whole, and
// every version of it is kept.
var fieldLimits = map[string]int{"title": 1024, "description": 64 << 10, "org": kit.MaxName, "parent": kit.MaxName}

// maxCustomValue bounds one custom field's JSON, in bytes (64 KiB, as a
// description): an item is read whole, and every version of it is kept.
const maxCustomValue = 64 << 10

// checkText refuses control characters in a text field: none in a title,
// org or parent (they are shown on one line, and escape sequences could
// take over a terminal), only newlines, carriage returns and tabs in a description. Invalid
// UTF-8 is refused too.
func checkText(field, s string) error {
	if !utf8.ValidString(s) {
		return kit.Validation(field, "is not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) && (field != "description" || (r != '\n' && r != '\t' && r != '\r')) {
			return kit.Validation(field, "must not contain control characters (found %U)", r)
		}
	}
	return nil
}

// editableFields are the fields updates may set, in a fixed order.
var editableFields = []string{"title", "description", "progress", "priority", "status", "due_at", "blocking", "tags", "org", "parent"}

// fixedFields are part of an item but never written by updates.
var fixedFields = []string{"id", "type", "owner", "global_version", "field_versions", "field_changed_at", "acl", "created_at", "updated_at", "deleted_at"}

// fieldValue returns a field's value in the item (custom.<key> included),
// as it appears in JSON.
func (it *Item) fieldValue(field string) any {
	switch field {
	case "title":
		return it.Title
	case "description":
		return it.Description
	case "progress":
		return it.Progress
	case "priority":
		return it.Priority
	case "status":
		return it.Status
	case "due_at":
		if it.DueAt == nil {
			return nil
		}
		return *it.DueAt
	case "blocking":
		return it.Blocking
	case "tags":
		return it.Tags
	case "org":
		return it.Org
	case "parent":
		return it.Parent
	case "deleted_at":
		if it.DeletedAt == nil {
			return nil
		}
		return *it.DeletedAt
	case "acl":
		return it.ACL
	}
	if key, ok := strings.CutPrefix(field, "custom."); ok {
		return it.Custom[key]
	}
	return nil
}

// change is one field's new value, validated.
type change struct {
	field string
	value any // typed: string, int, bool, *time.Time, []string, or any JSON value for custom
}

// parseUpdates validates an updates object (or a create's fields) and
// returns its changes in a stable order. Every problem is a ValidationError
// naming the field and saying what is allowed.
func parseUpdates(raw map[string]json.RawMessage) ([]change, error) {
	var out []change
	for _, field := range slices.Sorted(maps.Keys(raw)) {
		val := raw[field]
		switch {
		case field == "custom":
			var custom map[string]json.RawMessage
			if err := json.Unmarshal(val, &custom); err != nil || custom == nil {
				return nil, kit.Validation("custom", "must be an object of free-form fields, e.g. {\"sprint\": 12}")
			}
			for _, key := range slices.Sorted(maps.Keys(custom)) {
				if key == "" || strings.ContainsAny(key, "./") {
					return nil, kit.Validation("custom."+key, "a custom field's name must be non-empty, without '.' or '/'")
				}
				if err := kit.CheckName("custom."+key, key, ""); err != nil {
					return nil, err
				}
				if len(custom[key]) > maxCustomValue {
					return nil, kit.Validation("custom."+key, "is %d bytes of JSON; at most %d", len(custom[key]), maxCustomValue)
				}
				// Decoding cannot fail: custom[key] was just decoded from valid JSON.
				var v any
				dec := json.NewDecoder(bytes.NewReader(custom[key]))
				dec.UseNumber() // whole numbers beyond 2^53 stay exact
				_ = dec.Decode(&v)
				out = append(out, change{field: "custom." + key, value: v})
			}
			continue
		case slices.Contains(fixedFields, field):
			return nil, kit.Validation(field, "cannot be changed: it is set by engram (editable fields: %s, custom)", strings.Join(editableFields, ", "))
		case !slices.Contains(editableFields, field):
			return nil, kit.Validation(field, "unknown field %q; the fields are %s, and custom for free-form ones", field, strings.Join(editableFields, ", "))
		}
		v, err := parseField(field, val)
		if err != nil {
			return nil, err
		}
		out = append(out, change{field: field, value: v})
	}
	return out, nil
}

func parseField(field string, raw json.RawMessage) (any, error) {
	null := string(raw) == "null"
	switch field {
	case "title", "description", "org", "parent":
		var s string
		if null && field == "title" {
			return nil, kit.Validation(field, "must not be empty")
		}
		if null {
			return "", nil
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, kit.Validation(field, "must be a string")
		}
		if field == "title" && strings.TrimSpace(s) == "" {
			return nil, kit.Validation(field, "must not be empty")
		}
		if limit := fieldLimits[field]; len(s) > limit {
			return nil, kit.Validation(field, "is %d bytes; at most %d", len(s), limit)
		}
		if err := checkText(field, s); err != nil {
			return nil, err
		}
		return s, nil
	case "progress":
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || null {
			return nil, kit.Validation(field, "must be a whole number from 0 to 100")
		}
		if f != float64(int(f)) || f < 0 || f > 100 {
			return nil, kit.Validation(field, "must be a whole number from 0 to 100, not %v", f)
		}
		return int(f), nil
	case "priority", "status":
		allowed := Priorities
		if field == "status" {
			allowed = Statuses
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || !slices.Contains(allowed, s) {
			return nil, kit.Validation(field, "must be one of %s, not %s", strings.Join(allowed, ", "), raw)
		}
		return s, nil
	case "due_at":
		if null {
			return (*time.Time)(nil), nil
		}
		var t time.Time
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, kit.Validation(field, "must be an RFC 3339 time like \"2025-11-06T17:00:00Z\", or null")
		}
		t = t.UTC()
		return &t, nil
	case "blocking":
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil || null {
			return nil, kit.Validation(field, "must be true or false")
		}
		return b, nil
	case "tags":
		var tags []string
		if err := json.Unmarshal(raw, &tags); err != nil {
			return nil, kit.Validation(field, "must be a list of strings")
		}
		return normalizeTags(tags)
	}
	return nil, kit.Validation(field, "unknown field")
}

// normalizeTags trims, lower-cases and de-duplicates tags, keeping order.
func normalizeTags(tags []string) ([]string, error) {
	out := []string{}
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" {
			return nil, kit.Validation("tags", "a tag must not be empty")
		}
		if err := kit.CheckName("tags", t, "/"); err != nil {
			return nil, err
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// set writes a validated change into the item.
func (it *Item) set(c change) {
	switch c.field {
	case "title":
		it.Title = c.value.(string)
	case "description":
		it.Description = c.value.(string)
	case "progress":
		it.Progress = c.value.(int)
	case "priority":
		it.Priority = c.value.(string)
	case "status":
		it.Status = c.value.(string)
	case "due_at":
		it.DueAt = c.value.(*time.Time)
	case "blocking":
		it.Blocking = c.value.(bool)
	case "tags":
		it.Tags = c.value.([]string)
	case "org":
		it.Org = c.value.(string)
	case "parent":
		it.Parent = c.value.(string)
	default:
		key := strings.TrimPrefix(c.field, "custom.")
		if c.value == nil {
			delete(it.Custom, key)
		} else {
			if it.Custom == nil {
				it.Custom = map[string]any{}
			}
			it.Custom[key] = c.value
		}
	}
}

// equalValues compares two field values as JSON sees them.
func equalValues(a, b any) bool {
	switch x := a.(type) { // the common cases, without encoding
	case string:
		if y, ok := b.(string); ok {
			return x == y
		}
	case int:
		if y, ok := b.(int); ok {
			return x == y
		}
	case bool:
		if y, ok := b.(bool); ok {
			return x == y
		}
	case []string:
		if y, ok := b.([]string); ok && x != nil && y != nil {
			return slices.Equal(x, y)
		}
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func priorityRank(p string) int {
	if i := slices.Index(Priorities, p); i >= 0 {
		return i
	}
	return len(Priorities)
}

func validateType(t string) error {
	if !slices.Contains(Types, t) {
		return kit.Validation("type", "unknown item type %q; use one of %s", t, strings.Join(Types, ", "))
	}
	return nil
}

func notFound(id string) error {
	return errs.New(errs.NotFound, "no item %q (cortex.query lists the items you can read)", id).With("id", id)
}

func versionLabel(a, b int) string { return fmt.Sprintf("%d→%d", a, b) }
