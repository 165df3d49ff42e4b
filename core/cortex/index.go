package cortex

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/engram-console/engram/core/cortex/memindex"
	"github.com/engram-console/engram/storage"
)

// Index layout (all keys carry no value):
//
//	idx/cortex/q/<reader>/<l|d>/<type>/<status>/<order>/<id>  one per principal that may read the item
//	idx/cortex/tag/<tag>/<id>
//	idx/cortex/owner/<owner>/<id>
//	idx/cortex/org/<org>/<id>
//	idx/cortex/parent/<parent id>/<id>
//	idx/cortex/word/<word>/<id>                              words of title and description
//
// The q key answers most of a query from the key alone: whether the reader
// may see the item, whether it is deleted (l live, d deleted), its type and
// status, and its place in the active order — <order> is
// "<priority rank>|<due or ~>|<0 if blocking else 1>|<created>", which sorts
// critical before high..., earlier due dates first with no due date last,
// blocking first, then oldest first. A query scans only the q prefixes its
// filters allow, intersects with the other indexes' id sets, sorts the order
// keys, and reads just the page of items it returns.
const space = "cortex"

func orderKey(it *Item) string {
	due := "~"
	if it.DueAt != nil {
		due = storage.Time(*it.DueAt)
	}
	blocking := "1"
	if it.Blocking {
		blocking = "0"
	}
	return fmt.Sprintf("%d|%s|%s|%s", priorityRank(it.Priority), due, blocking, storage.Time(it.CreatedAt))
}

func liveness(it *Item) string {
	if it.DeletedAt != nil {
		return "d"
	}
	return "l"
}

// indexKeys lists every index key of an item.
func indexKeys(it *Item) [][]byte {
	var keys [][]byte
	order := orderKey(it)
	for _, r := range it.readers() {
		keys = append(keys, storage.Key(storage.PrefixIndex, space, "q", r, liveness(it), it.Type, it.Status, order, it.ID))
	}
	for _, t := range it.Tags {
		keys = append(keys, storage.IndexKey(space, "tag", t, it.ID))
	}
	keys = append(keys, storage.IndexKey(space, "owner", it.Owner, it.ID))
	if it.Org != "" {
		keys = append(keys, storage.IndexKey(space, "org", it.Org, it.ID))
	}
	if it.Parent != "" {
		keys = append(keys, storage.IndexKey(space, "parent", it.Parent, it.ID))
	}
	for _, w := range words(it.Title + " " + it.Description) {
		keys = append(keys, storage.IndexKey(space, "word", w, it.ID))
	}
	return keys
}

// maxIndexedWords bounds the word index of one item.
const maxIndexedWords = 1024

// maxWordLength skips "words" too long to be searched for (a key holds at
// most 64 KB, and nobody types a 65-letter word).
const maxWordLength = 64

// words are the distinct lower-case words (letters and digits, two or more)
// of s, in order of appearance.
func words(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if n := len([]rune(w)); n < 2 || n > maxWordLength || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == maxIndexedWords {
			break
		}
	}
	return out
}

// writeIndexDiff removes the index keys of before that after lacks and adds
// the ones after brings (before may be nil: a new item).
func writeIndexDiff(tx *storage.Tx, before, after *Item) error {
	old := map[string]bool{}
	if before != nil {
		for _, k := range indexKeys(before) {
			old[string(k)] = true
		}
	}
	for _, k := range indexKeys(after) {
		if old[string(k)] {
			delete(old, string(k))
			continue
		}
		if err := tx.Set(k, nil); err != nil {
			return err
		}
	}
	for k := range old {
		if err := tx.Delete([]byte(k)); err != nil {
			return err
		}
	}
	return nil
}

// Query selects items. Zero fields match everything.
type Query struct {
	Type           string     `json:"type,omitempty" help:"goal, action or question"`
	Status         []string   `json:"status,omitempty" help:"any of these statuses"`
	Tags           []string   `json:"tags,omitempty" help:"items with any of these tags"`
	Priority       []string   `json:"priority,omitempty" help:"any of these priorities"`
	Owner          string     `json:"owner,omitempty" help:"items owned by this agent"`
	Org            string     `json:"org,omitempty" help:"items of this organisation"`
	Parent         string     `json:"parent,omitempty" help:"items under this item (e.g. the questions of a goal)"`
	Text           string     `json:"text,omitempty" help:"words that must all appear in title or description (prefixes match)"`
	DueBefore      *time.Time `json:"due_before,omitempty" help:"due strictly before this time"`
	DueAfter       *time.Time `json:"due_after,omitempty" help:"due at or after this time"`
	IncludeDeleted bool       `json:"include_deleted,omitempty" help:"include soft-deleted items"`
	Limit          int        `json:"limit,omitempty" help:"at most this many (default 50, at most 1000)"`
	Cursor         string     `json:"cursor,omitempty" help:"next_cursor of the previous page"`
}

// QueryResult is a page of items in active order, with the count and a
// checksum of every matching id (not only the page's).
type QueryResult struct {
	Items []*Item `json:"items"`
	Count int     `json:"count"`
	// Checksum is the hex SHA-256 of the matching ids, sorted, one per line:
	// two result sets are the same exactly when their checksums are.
	Checksum string `json:"checksum"`
	// NextCursor fetches the next page; "" on the last one.
	NextCursor string `json:"next_cursor"`
	// CountsByType splits Count by item type.
	CountsByType map[string]int `json:"counts_by_type"`
}

const (
	defaultLimit = 50
	maxLimit     = 1000
	// Bounds on a query's filters, so that no query does much more work
	// than an ordinary one: values of a list filter, bytes and words of text.
	maxFilterValues = 100
	maxTextFilter   = 1000
	maxTextWords    = 16
)

func (q *Query) validate() error {
	if q.Type != "" {
		if err := validateType(q.Type); err != nil {
			return err
		}
	}
	for _, list := range []struct {
		field  string
		values []string
	}{{"status", q.Status}, {"priority", q.Priority}, {"tags", q.Tags}} {
		if len(list.values) > maxFilterValues {
			return fieldErr(list.field, "%d values; give at most %d (items match any of them)", len(list.values), maxFilterValues)
		}
	}
	if len(q.Text) > maxTextFilter {
		return fieldErr("text", "%d bytes; give at most %d: a few words that must all appear", len(q.Text), maxTextFilter)
	}
	if n := len(words(q.Text)); n > maxTextWords {
		return fieldErr("text", "%d words; give at most %d (each must appear in title or description)", n, maxTextWords)
	}
	for _, s := range q.Status {
		if !slices.Contains(Statuses, s) {
			return fieldErr("status", "unknown status %q; use any of %s", s, strings.Join(Statuses, ", "))
		}
	}
	for _, p := range q.Priority {
		if !slices.Contains(Priorities, p) {
			return fieldErr("priority", "unknown priority %q; use any of %s", p, strings.Join(Priorities, ", "))
		}
	}
	if len(q.Tags) > 0 {
		// Tags are stored trimmed and lower-cased; match them the same way.
		tags, err := normalizeTags(q.Tags)
		if err != nil {
			return err
		}
		q.Tags = tags
	}
	switch {
	case q.Limit < 0:
		return fieldErr("limit", "must be positive")
	case q.Limit == 0:
		q.Limit = defaultLimit
	case q.Limit > maxLimit:
		return fieldErr("limit", "at most %d per page; use next_cursor for more", maxLimit)
	}
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor)
		if err == nil {
			_, err = parseOrder(c)
		}
		if err != nil {
			return fieldErr("cursor", "not a cursor this query returned; pass next_cursor unchanged, or leave it out for the first page")
		}
	}
	return nil
}

type candidate struct {
	id, order string
}

// scan evaluates q for principal inside tx from the index keys in the
// store: what a query does when the in-memory index may not be used
// (liveIndex), and the reference the index is tested against.
func (q *Query) scan(tx *storage.Tx, principal string) (QueryResult, error) {
	found := map[string]string{}  // id → order key
	typeOf := map[string]string{} // id → item type
	live := []string{"l"}
	if q.IncludeDeleted {
		live = append(live, "d")
	}
	types := Types
	if q.Type != "" {
		types = []string{q.Type}
	}
	statuses := Statuses
	if len(q.Status) > 0 {
		statuses = q.Status
	}
	ranks := []string{""}
	if len(q.Priority) > 0 {
		ranks = nil
		for _, p := range q.Priority {
			ranks = append(ranks, fmt.Sprintf("%d|", priorityRank(p)))
		}
	}
	for _, l := range live {
		for _, t := range types {
			for _, s := range statuses {
				base := storage.PrefixKey(storage.PrefixIndex, space, "q", principal, l, t, s)
				for _, r := range ranks {
					prefix := append(slices.Clip(base), r...)
					err := tx.Keys(storage.Prefix(prefix), func(k []byte) error {
						// .../<order>/<id>: the order part never needs unescaping.
						key := string(k)
						cut := strings.LastIndexByte(key, '/')
						order := key[strings.LastIndexByte(key[:cut], '/')+1 : cut]
						id := storage.LastPart(k)
						if q.dueMatches(order) {
							found[id] = order
							typeOf[id] = t
						}
						return nil
					})
					if err != nil {
						return QueryResult{}, err
					}
				}
			}
		}
	}
	filters := []struct {
		field  string
		values []string
		prefix bool
	}{
		{"tag", q.Tags, false},
		{"owner", nonEmpty(q.Owner), false},
		{"org", nonEmpty(q.Org), false},
		{"parent", nonEmpty(q.Parent), false},
	}
	for _, w := range words(q.Text) {
		filters = append(filters, struct {
			field  string
			values []string
			prefix bool
		}{"word", []string{w}, true})
	}
	for _, f := range filters {
		if len(f.values) == 0 || len(found) == 0 {
			continue
		}
		keep := map[string]bool{}
		for _, v := range f.values {
			prefix := storage.PrefixKey(storage.PrefixIndex, space, f.field, v)
			if f.prefix {
				prefix = prefix[:len(prefix)-1] // "migr" matches migration
			}
			err := tx.Keys(storage.Prefix(prefix), func(k []byte) error {
				if id := storage.LastPart(k); found[id] != "" {
					keep[id] = true
				}
				return nil
			})
			if err != nil {
				return QueryResult{}, err
			}
		}
		for id := range found {
			if !keep[id] {
				delete(found, id)
			}
		}
	}
	res, err := q.page(tx, found)
	res.CountsByType = map[string]int{}
	for id := range found {
		res.CountsByType[typeOf[id]]++
	}
	return res, err
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// dueMatches applies the due range to an order key's due part.
func (q *Query) dueMatches(order string) bool {
	if q.DueBefore == nil && q.DueAfter == nil {
		return true
	}
	due := strings.Split(order, "|")[1]
	if due == "~" {
		return false
	}
	if q.DueBefore != nil && due >= storage.Time(*q.DueBefore) {
		return false
	}
	return q.DueAfter == nil || due >= storage.Time(*q.DueAfter)
}

// page sorts the matches, sums them up and reads the page's items.
func (q *Query) page(tx *storage.Tx, found map[string]string) (QueryResult, error) {
	all := make([]candidate, 0, len(found))
	ids := make([]string, 0, len(found))
	for id, order := range found {
		all = append(all, candidate{id: id, order: order})
		ids = append(ids, id)
	}
	slices.SortFunc(all, func(a, b candidate) int {
		if c := strings.Compare(a.order, b.order); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	slices.Sort(ids)
	res := QueryResult{Count: len(all), Checksum: checksum(ids), Items: []*Item{}}
	start := 0
	if q.Cursor != "" {
		after, _ := decodeCursor(q.Cursor)
		start, _ = slices.BinarySearchFunc(all, after, func(c, target candidate) int {
			if c := strings.Compare(c.order, target.order); c != 0 {
				return c
			}
			return strings.Compare(c.id, target.id+"\x00") // strictly after the cursor
		})
	}
	end := min(start+q.Limit, len(all))
	for _, c := range all[start:end] {
		var it Item
		if err := tx.GetJSON(itemKey(c.id), &it); err != nil {
			return QueryResult{}, fmt.Errorf("index names item %s: %w", c.id, err)
		}
		res.Items = append(res.Items, &it)
	}
	if end < len(all) && end > start { // (a limit of 0, as check asks: no page)
		res.NextCursor = encodeCursor(all[end-1])
	}
	return res, nil
}

// checksum is the hex SHA-256 of ids (sorted), one per line.
func checksum(sortedIDs []string) string {
	h := sha256.New()
	for _, id := range sortedIDs {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Checksum is the checksum a query reports for these ids (any order).
func Checksum(ids []string) string {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	return checksum(sorted)
}

func encodeCursor(c candidate) string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.order + "\n" + c.id))
}

func decodeCursor(s string) (candidate, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return candidate{}, err
	}
	order, id, ok := strings.Cut(string(b), "\n")
	if !ok || id == "" {
		return candidate{}, fmt.Errorf("malformed cursor")
	}
	return candidate{id: id, order: order}, nil
}

// parseOrder reads a cursor's place in the active order (orderKey's
// "<rank>|<due or ~>|<0 or 1>|<created>", and the id).
func parseOrder(c candidate) (memindex.Position, error) {
	parts := strings.Split(c.order, "|")
	bad := fmt.Errorf("malformed cursor")
	if len(parts) != 4 || len(parts[0]) != 1 || parts[0][0] < '0' || parts[0][0] > '9' || (parts[2] != "0" && parts[2] != "1") {
		return memindex.Position{}, bad
	}
	p := memindex.Position{Rank: int(parts[0][0] - '0'), Blocking: parts[2] == "0", ID: c.id}
	if parts[1] != "~" {
		due, err := storage.ParseTime(parts[1])
		if err != nil {
			return memindex.Position{}, bad
		}
		p.Due = &due
	}
	created, err := storage.ParseTime(parts[3])
	if err != nil {
		return memindex.Position{}, bad
	}
	p.Created = created
	// Only orderKey's own spelling: Query.scan compares cursors as
	// strings, the index as a Position, and the two must agree (upper
	// case hex would be the same place to one and another to the other).
	due := "~"
	if p.Due != nil {
		due = storage.Time(*p.Due)
	}
	if c.order != fmt.Sprintf("%s|%s|%s|%s", parts[0], due, parts[2], storage.Time(p.Created)) {
		return memindex.Position{}, bad
	}
	return p, nil
}

// filter is q as the in-memory index takes it.
func (q *Query) filter(principal string) memindex.Filter {
	f := memindex.Filter{
		Reader: principal, IncludeDeleted: q.IncludeDeleted, Statuses: q.Status, Tags: q.Tags,
		Owner: q.Owner, Org: q.Org, Parent: q.Parent, WordPrefixes: words(q.Text),
		DueBefore: q.DueBefore, DueAfter: q.DueAfter,
	}
	if q.Type != "" {
		f.Types = []string{q.Type}
	}
	for _, p := range q.Priority {
		f.Ranks = append(f.Ranks, priorityRank(p))
	}
	return f
}

// fromIndex evaluates q for principal with the in-memory index, reading
// the page's items from tx (a snapshot the index is exact for: liveIndex).
func (q *Query) fromIndex(idx *memindex.Index, tx *storage.Tx, principal string) (QueryResult, error) {
	return q.fromIndexCached(idx, tx, principal, nil)
}

// fromIndexCached is fromIndex with the matches' set and summary taken
// from cache when the same filters ran on the same index generation.
func (q *Query) fromIndexCached(idx *memindex.Index, tx *storage.Tx, principal string, cache *matchCache) (QueryResult, error) {
	f := q.filter(principal)
	m := cache.get(idx, f)
	if m == nil {
		set := idx.Match(f)
		m = &matched{set: set, count: int(set.GetCardinality()), checksum: idx.Checksum(set), byType: idx.CountsByType(set)}
		cache.put(idx, f, m)
	}
	set := m.set
	var after *memindex.Position
	if q.Cursor != "" {
		c, _ := decodeCursor(q.Cursor) // validate checked it
		p, _ := parseOrder(c)
		after = &p
	}
	ids, more := m.page(idx, set, after, q.Cursor, q.Limit)
	res := QueryResult{Count: m.count, Checksum: m.checksum, Items: []*Item{}, CountsByType: maps.Clone(m.byType)}
	for _, id := range ids {
		var it Item
		if err := tx.GetJSON(itemKey(id), &it); err != nil {
			return QueryResult{}, fmt.Errorf("the query index names item %s: %w", id, err)
		}
		res.Items = append(res.Items, &it)
	}
	if more && len(res.Items) > 0 {
		last := res.Items[len(res.Items)-1]
		res.NextCursor = encodeCursor(candidate{id: last.ID, order: orderKey(last)})
	}
	return res, nil
}
