package memory

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/search"
	"github.com/engram-console/engram/storage"
)

// instruction is one form of forget instruction: a pattern, and how to
// find the items it names.
type instruction struct {
	form    string // as shown to the user
	pattern *regexp.Regexp
	// only restricts the form to one store type ("" for every type).
	only string
	find func(s *store, tx *storage.Tx, st *state, call action.Call, m []string) ([]*Item, error)
}

var instructions = []instruction{
	{form: "oldest [N]", pattern: regexp.MustCompile(`(?i)^(?:the )?oldest(?: (\d+))?(?: items?| memories)?$`),
		find: func(s *store, tx *storage.Tx, _ *state, _ action.Call, m []string) ([]*Item, error) {
			return s.firstN(tx, "time", false, m[1])
		}},
	{form: "newest [N]", pattern: regexp.MustCompile(`(?i)^(?:the )?(?:newest|most recent|latest)(?: (\d+))?(?: items?| memories)?$`),
		find: func(s *store, tx *storage.Tx, _ *state, _ action.Call, m []string) ([]*Item, error) {
			return s.firstN(tx, "time", true, m[1])
		}},
	{form: "least important [N]", pattern: regexp.MustCompile(`(?i)^(?:the )?least important(?: (\d+))?(?: items?| memories)?$`),
		find: func(s *store, tx *storage.Tx, st *state, _ action.Call, m []string) ([]*Item, error) {
			n, err := count(m[1])
			if err != nil {
				return nil, err
			}
			var out []*Item
			err = s.walkImp(tx, st, func(_ string, it *Item) error {
				out = append(out, it)
				if len(out) == n {
					return storage.ErrStop
				}
				return nil
			})
			return out, err
		}},
	{form: "item <id>", pattern: regexp.MustCompile(`(?i)^items? (\S+(?:\s*,\s*\S+)*)$`),
		find: func(s *store, tx *storage.Tx, _ *state, _ action.Call, m []string) ([]*Item, error) {
			var out []*Item
			for _, id := range strings.Split(m[1], ",") {
				it, err := s.get(tx, strings.TrimSpace(id))
				if err != nil {
					return nil, err
				}
				out = append(out, it)
			}
			return out, nil
		}},
	{form: "items tagged <tag>", pattern: regexp.MustCompile(`(?i)^(?:items |memories |everything )?tagged (.+)$`),
		find: func(s *store, tx *storage.Tx, _ *state, _ action.Call, m []string) ([]*Item, error) {
			return s.byIndex(tx, "tag", strings.ToLower(strings.TrimSpace(m[1])))
		}},
	{form: "older than <duration> (e.g. 30 days, 12h)", pattern: regexp.MustCompile(`(?i)^(?:items |memories |everything )?older than (.+)$`),
		find: func(s *store, tx *storage.Tx, _ *state, call action.Call, m []string) ([]*Item, error) {
			d, err := parseDuration(m[1])
			if err != nil {
				return nil, err
			}
			return s.before(tx, call.Clock.Now().Add(-d))
		}},
	{form: "before <date> (RFC 3339 or 2025-11-05)", pattern: regexp.MustCompile(`(?i)^(?:items |memories |everything )?before (\S+)$`),
		find: func(s *store, tx *storage.Tx, _ *state, _ action.Call, m []string) ([]*Item, error) {
			t, err := parseDate(m[1])
			if err != nil {
				return nil, err
			}
			return s.before(tx, t)
		}},
	{form: "from agent <id>", pattern: regexp.MustCompile(`(?i)^(?:items |memories |everything )?from agent (\S+)$`),
		find: func(s *store, tx *storage.Tx, _ *state, _ action.Call, m []string) ([]*Item, error) {
			return s.byIndex(tx, "agent", m[1])
		}},
	{form: "about <topic>", pattern: regexp.MustCompile(`(?i)^(?:items |memories |everything )?about (.+)$`),
		find: func(s *store, tx *storage.Tx, st *state, _ action.Call, m []string) ([]*Item, error) {
			// The live items about the topic: scoring at least forgetFloor
			// of the best — not every item sharing one word with it.
			scores, err := s.index().Scores(tx, m[1], search.Stats{Docs: st.Docs, TotalLength: st.TotalLength}, liveOnly)
			if err != nil {
				return nil, err
			}
			var out []*Item
			best := 0.0
			for _, id := range sortedIDs(scores) {
				if best == 0 {
					best = scores[id]
				}
				if scores[id] < forgetFloor*best {
					break
				}
				it, err := s.get(tx, id)
				if err != nil {
					return nil, err
				}
				out = append(out, it)
			}
			return out, nil
		}},
	{form: "to fit <n> tokens", only: TypeWorking, pattern: regexp.MustCompile(`(?i)^(?:enough )?to fit (\d+) tokens?$`),
		find: func(s *store, tx *storage.Tx, st *state, _ action.Call, m []string) ([]*Item, error) {
			target, err := strconv.Atoi(m[1])
			if err != nil {
				return nil, kit.Validation("instruction", "%s tokens is not a number of tokens", m[1])
			}
			usage := st.TokenUsage
			var out []*Item
			err = s.walkImp(tx, st, func(_ string, it *Item) error {
				if usage <= target {
					return storage.ErrStop
				}
				out = append(out, it)
				usage -= it.TokensEstimate
				return nil
			})
			return out, err
		}},
	{form: "episode <id>", only: TypeEpisodic, pattern: regexp.MustCompile(`(?i)^(?:the )?episode (\S+)$`),
		find: func(s *store, tx *storage.Tx, _ *state, _ action.Call, m []string) ([]*Item, error) {
			return s.byIndex(tx, "episode", m[1])
		}},
}

// forgetFloor is how close to the best match an item must score for
// "about <topic>" to forget it: stricter than remember's relevanceFloor, as
// forgetting is destructive ("about the Lisbon trip" should not take the
// Berlin trip along).
const forgetFloor = 0.5

// liveOnly keeps the postings of live items.
func liveOnly(_ string, attr byte) bool { return attr != attrDeleted }

// count reads the N of "oldest N" (1 when absent).
func count(s string) (int, error) {
	if s == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, kit.Validation("instruction", "%s is not a count of items; say e.g. \"oldest 3\"", s)
	}
	return n, nil
}

// forms lists the instructions a store of type t understands.
func forms(t string) []string {
	var out []string
	for _, in := range instructions {
		if in.only == "" || in.only == t {
			out = append(out, in.form)
		}
	}
	return out
}

// Forget removes the items an instruction names: soft (marked deleted,
// kept for audit, hidden from remember unless include_deleted) or hard
// (erased with every index entry). A dry run only says what would go.
func (s *store) Forget(ctx context.Context, call action.Call, req ForgetRequest) (ForgetResult, error) {
	if req.Mode == "" {
		req.Mode = "soft"
	}
	if req.Mode != "soft" && req.Mode != "hard" {
		return ForgetResult{}, kit.Validation("mode", "unknown mode %q; use soft (keep, marked deleted) or hard (erase)", req.Mode)
	}
	// Ids and agents keep their case: the patterns ignore it instead.
	text := strings.TrimSuffix(strings.Join(strings.Fields(req.Instruction), " "), ".")
	if len(text) > 7 && strings.EqualFold(text[:7], "forget ") {
		text = text[7:]
	}
	if text == "" {
		return ForgetResult{}, kit.Validation("instruction", "say what to forget, e.g. \"oldest\", \"items tagged draft\" or \"item <id>\"")
	}
	res := ForgetResult{DryRun: req.DryRun, Mode: req.Mode, Forgotten: []*Item{}}
	err := s.env.Update(ctx, func(tx *kit.Txn) error {
		res.Forgotten = []*Item{}
		st, err := s.loadAs(tx.Tx, call, forgetPermission(req))
		if err != nil {
			return err
		}
		var found []*Item
		matched := false
		for _, in := range instructions {
			m := in.pattern.FindStringSubmatch(text)
			if m == nil || (in.only != "" && in.only != st.Type) {
				continue
			}
			matched, res.Matched = true, in.form
			if found, err = in.find(s, tx.Tx, st, call, m); err != nil {
				return err
			}
			break
		}
		if !matched {
			return errs.New(errs.UnsupportedInstruction, "store %q (%s memory) does not understand %q; it understands: %s",
				s.name, st.Type, req.Instruction, strings.Join(forms(st.Type), "; ")).With("understood", forms(st.Type))
		}
		// "item a, a" names a once: forgetting it twice would count it twice.
		seen := map[string]bool{}
		found = slices.DeleteFunc(found, func(it *Item) bool {
			dup := seen[it.ID]
			seen[it.ID] = true
			return dup
		})
		for _, it := range found {
			if req.DryRun || (it.Deleted && req.Mode == "soft") {
				res.Forgotten = append(res.Forgotten, it)
				continue
			}
			if err := s.forgetOne(tx, call, st, it, req.Mode); err != nil {
				return err
			}
			res.Forgotten = append(res.Forgotten, it)
		}
		if req.DryRun || len(found) == 0 {
			return nil
		}
		ids := make([]string, len(found))
		for i, it := range found {
			ids[i] = it.ID
		}
		EventForgotten.Publish(tx, st.audience(), ForgottenEvent{Store: s.name, IDs: ids, Mode: req.Mode})
		_, err = tx.Trace(call, "memory.forgotten", fmt.Sprintf("memory %s: forgot %d item(s) (%s, %s): %s",
			s.name, len(ids), res.Matched, req.Mode, strings.Join(ids, ", ")), ForgottenEvent{Store: s.name, IDs: ids, Mode: req.Mode})
		return err
	})
	if err != nil {
		return ForgetResult{}, err
	}
	res.Success = true
	return res, nil
}

// forgetPermission is what a forget needs: a dry run only reads, a soft
// forget changes items (write), erasing them needs delete.
func forgetPermission(req ForgetRequest) string {
	switch {
	case req.DryRun:
		return access.Read
	case req.Mode == "hard":
		return access.Delete
	}
	return access.Write
}

// firstN is the first n live items in an index's order (n as written: "" is 1).
func (s *store) firstN(tx *storage.Tx, kind string, desc bool, written string) ([]*Item, error) {
	n, err := count(written)
	if err != nil {
		return nil, err
	}
	var out []*Item
	err = s.walk(tx, kind, desc, nil, func(it *Item) error {
		out = append(out, it)
		if len(out) == n {
			return storage.ErrStop
		}
		return nil
	})
	return out, err
}

// byIndex is the live items under an index value (a tag, an agent...).
func (s *store) byIndex(tx *storage.Tx, kind, value string) ([]*Item, error) {
	var out []*Item
	err := tx.Keys(storage.Prefix(idxPrefix(s.name, kind, value)), func(k []byte) error {
		it, err := s.get(tx, storage.LastPart(k))
		if err != nil {
			return err
		}
		if !it.Deleted {
			out = append(out, it)
		}
		return nil
	})
	return out, err
}

// before is the live items timestamped before t.
func (s *store) before(tx *storage.Tx, t time.Time) ([]*Item, error) {
	cut := storage.Time(t)
	var out []*Item
	err := tx.Keys(storage.Prefix(idxPrefix(s.name, "time")), func(k []byte) error {
		parts := storage.SplitKey(storage.PrefixIndex, k)
		if parts[len(parts)-2] >= cut {
			return storage.ErrStop
		}
		it, err := s.get(tx, storage.LastPart(k))
		if err != nil {
			return err
		}
		if !it.Deleted {
			out = append(out, it)
		}
		return nil
	})
	return out, err
}

var durationWords = regexp.MustCompile(`(?i)^(\d+(?:\.\d+)?)\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hrs?|hours?|d|days?|w|weeks?|months?|y|years?)$`)

// parseDuration reads "30 days", "12h", "2 weeks", or a Go duration.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	m := durationWords.FindStringSubmatch(s)
	if m == nil {
		return 0, kit.Validation("instruction", "%q is not a duration; write it like \"30 days\", \"12 hours\" or \"90m\"", s)
	}
	n, _ := strconv.ParseFloat(m[1], 64)
	word := strings.ToLower(m[2]) // "30 Days" is 30 days, not 0
	unit := map[byte]time.Duration{'s': time.Second, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour, 'y': 365 * 24 * time.Hour}[word[0]]
	switch {
	case strings.HasPrefix(word, "mo"):
		unit = 30 * 24 * time.Hour
	case word[0] == 'm':
		unit = time.Minute
	}
	d := n * float64(unit)
	if d >= math.MaxInt64 {
		return 0, kit.Validation("instruction", "%q is too long a duration", s)
	}
	return time.Duration(d), nil
}

// parseDate reads RFC 3339 or a plain date (midnight UTC).
func parseDate(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, kit.Validation("instruction", "%q is not a date; write it like 2025-11-05 or 2025-11-05T10:00:00Z", s)
}

func sortedIDs(scores map[string]float64) []string {
	ids := make([]string, 0, len(scores))
	for id := range scores {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		if scores[a] != scores[b] {
			if scores[a] > scores[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return ids
}
