//go:build !noplanning

package planner

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/input"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// Options configure the planner.
type Options struct {
	// Sleep waits between retries and in task.sleep (default: real time,
	// cut short by cancellation). Tests inject one that records.
	Sleep func(ctx context.Context, d time.Duration) error
	// MaxReplans is the default replan budget of new plans (default 3).
	MaxReplans int
}

// Planner makes and runs plans.
type Planner struct {
	env  *kit.Env
	opts Options

	mu      sync.Mutex
	running map[string]context.CancelFunc
	live    map[string]*livePlan // running plans, for readers
}

// livePlan is a running plan as its run changes it: the run's scheduler
// (its only writer) changes it holding mu, and readers copy it holding mu.
// (It used to be re-encoded after every change, which made a run of n
// subtasks cost O(n²).)
type livePlan struct {
	mu   sync.Mutex
	plan *Plan
}

// New returns a planner over env.
func New(env *kit.Env, opts Options) *Planner {
	if opts.Sleep == nil {
		opts.Sleep = llm.SleepReal
	}
	if opts.MaxReplans == 0 {
		opts.MaxReplans = 3
	}
	return &Planner{env: env, opts: opts, running: map[string]context.CancelFunc{}, live: map[string]*livePlan{}}
}

func (pl *Planner) sleep(ctx context.Context, d time.Duration) error { return pl.opts.Sleep(ctx, d) }

// claim marks a plan running; false if it already is.
func (pl *Planner) claim(id string, p *Plan, cancel context.CancelFunc) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if _, busy := pl.running[id]; busy {
		return false
	}
	pl.running[id] = cancel
	return true
}

func (pl *Planner) release(id string) {
	pl.mu.Lock()
	delete(pl.running, id)
	delete(pl.live, id)
	pl.mu.Unlock()
}

// showLive lets readers see a running plan (until release).
func (pl *Planner) showLive(id string, lp *livePlan) {
	pl.mu.Lock()
	if _, ok := pl.running[id]; ok {
		pl.live[id] = lp
	}
	pl.mu.Unlock()
}

// Cancel stops a running plan (it stops launching subtasks and interrupts
// the running ones, which will run again on resume).
func (pl *Planner) Cancel(id string) bool {
	pl.mu.Lock()
	cancel, ok := pl.running[id]
	pl.mu.Unlock()
	if ok {
		cancel()
	}
	return ok
}

// Get reads a plan: the live state of a running one, else the stored one.
func (pl *Planner) Get(id string) (*Plan, error) {
	pl.mu.Lock()
	lp, ok := pl.live[id]
	pl.mu.Unlock()
	if ok {
		lp.mu.Lock()
		b, err := json.Marshal(lp.plan)
		lp.mu.Unlock()
		var p Plan
		if err == nil && json.Unmarshal(b, &p) == nil {
			return &p, nil
		}
	}
	var p *Plan
	err := pl.env.Store.View(func(tx *storage.Tx) error {
		var err error
		p, err = loadPlan(tx, id)
		return err
	})
	if isUnreadable(err) {
		return nil, unreadablePlan(id, err)
	}
	pl.shownStatus(p)
	return p, err
}

// List returns the plans principal may read, newest first, and those of
// them whose records cannot be read (by id, with why): one damaged plan
// must not hide the others. A plan whose access list is unreadable is
// listed, as unreadable, to access.LegacyOwner only.
func (pl *Planner) List(principal string) ([]*Plan, []UnreadablePlan, error) {
	return pl.list(func(acl access.ACL, aclErr error) bool {
		if aclErr != nil {
			return principal == access.LegacyOwner
		}
		return acl.Can(principal, access.Read)
	})
}

// list reads the plans that show says to, newest first.
func (pl *Planner) list(show func(acl access.ACL, aclErr error) bool) ([]*Plan, []UnreadablePlan, error) {
	var ids []string
	aclErrs := map[string]error{}
	err := pl.env.Store.View(func(tx *storage.Tx) error {
		return tx.Keys(storage.Prefix(planPrefix()), func(k []byte) error {
			parts := storage.SplitKey(storage.PrefixPlan, k)
			if len(parts) != 1 {
				return nil
			}
			acl, err := loadACL(tx, parts[0])
			if err != nil && !errors.Is(err, errACLUnreadable) {
				return err
			}
			if show(acl, err) {
				ids = append(ids, parts[0])
				if err != nil {
					aclErrs[parts[0]] = unreadablePlan(parts[0], err)
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, nil, err
	}
	plans := make([]*Plan, 0, len(ids))
	var unreadable []UnreadablePlan
	for _, id := range ids {
		err := aclErrs[id]
		var p *Plan
		if err == nil {
			p, err = pl.Get(id)
		}
		switch {
		case errs.KindOf(err) == errs.NotFound:
			continue // deleted meanwhile
		case err != nil:
			unreadable = append(unreadable, UnreadablePlan{PlanID: id, Error: errs.As(err).Message})
			continue
		}
		plans = append(plans, p)
	}
	slices.SortFunc(plans, func(a, b *Plan) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return plans, unreadable, nil
}

// Create stores a plan written by hand (or read from a YAML file).
func (pl *Planner) Create(ctx context.Context, call action.Call, req CreateArgs) (*Plan, error) {
	hint := ""
	if req.File != "" {
		if req.Goal != "" || len(req.Subtasks) > 0 {
			return nil, kit.Validation("file", "give either file or goal and subtasks, not both")
		}
		file := req.File
		var err error
		if req, err = readPlanFile(file, req); err != nil {
			return nil, err
		}
		// A plan from a file gets a name a person can read and type
		// (issue 14: a UUID from a YAML file was hard to find again).
		hint = cmp.Or(slug(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))), slug(req.Goal))
	}
	if strings.TrimSpace(req.Goal) == "" {
		return nil, kit.Validation("goal", "a plan needs a goal")
	}
	if len(req.State) > 0 && req.State[0] != '{' {
		return nil, kit.Validation("state", "must be a JSON object")
	}
	subtasks := make([]*Subtask, len(req.Subtasks))
	for i, in := range req.Subtasks {
		if in.Action != nil && in.Action.Name == "" {
			return nil, kit.Validation(fmt.Sprintf("subtasks[%d].action.name", i), "name the action (or leave action out to ask the model)")
		}
		desc := in.Description
		if desc == "" {
			desc = in.ID
		}
		subtasks[i] = &Subtask{ID: in.ID, Description: desc, Dependencies: append([]string{}, in.Dependencies...), Action: in.Action,
			Status: Pending, Depth: 1}
	}
	maxReplans := pl.opts.MaxReplans
	if req.MaxReplans != nil {
		if *req.MaxReplans < 0 {
			return nil, kit.Validation("max_replans", "must be 0 or more")
		}
		maxReplans = *req.MaxReplans
	}
	p := &Plan{ID: req.ID, Goal: req.Goal, Strategy: "manual", Subtasks: subtasks, Status: "pending", MaxReplans: maxReplans,
		OriginalPlanID: req.OriginalPlanID, State: req.State}
	if p.ID == "" && hint != "" {
		return pl.storeNamed(ctx, call, p, hint)
	}
	return pl.store(ctx, call, p)
}

// readPlanFile reads {goal, subtasks, ...} from a YAML file.
func readPlanFile(path string, req CreateArgs) (CreateArgs, error) {
	// input reads only regular files up to its cap, refuses YAML aliases
	// and deep nesting, and never quotes the file in its errors.
	data, err := input.ReadFile(path, input.MaxDocument)
	if err != nil {
		return req, kit.Validation("file", "cannot read %v", err)
	}
	js, err := input.YAMLToJSON(path, data)
	if err != nil {
		return req, errs.New(errs.Parse, "file: not valid YAML for a plan: %v", err).With("field", "file")
	}
	var fromFile CreateArgs
	if err := action.DecodeStrict(js, &fromFile); err != nil {
		// The decoder's messages name fields, not values; but a file that
		// is one scalar (say, a password line) must not come back in one.
		if !bytes.HasPrefix(js, []byte("{")) {
			return req, errs.New(errs.Validation, "file: %s holds %s, not a plan (a mapping with goal and subtasks)", path, action.JSONKind(js)).With("field", "file")
		}
		// Messages quote unknown keys and bad values: only those that look
		// like field names are kept, so no line of the file comes back.
		e := errs.As(err)
		return req, errs.New(e.Kind, "file: %s: %s", path, input.Redact(e.Message)).With("field", "file")
	}
	if fromFile.File != "" {
		return req, kit.Validation("file", "%s names another file; a plan file holds the plan itself", path)
	}
	if req.ID != "" {
		fromFile.ID = req.ID
	}
	return fromFile, nil
}

// store validates a new plan and saves it.
func (pl *Planner) store(ctx context.Context, call action.Call, p *Plan) (*Plan, error) {
	if p.ID == "" {
		p.ID = pl.env.IDs.New()
	} else if err := kit.CheckName("id", p.ID, "/"); err != nil {
		return nil, err
	}
	if _, err := p.Validate(); err != nil {
		return nil, err
	}
	now := call.Clock.Now()
	p.CreatedAt, p.UpdatedAt = now, now
	err := pl.env.Update(ctx, func(tx *kit.Txn) error {
		if ok, err := tx.Has(planKey(p.ID)); err != nil {
			return err
		} else if ok {
			return errs.New(errs.Conflict, "a plan with id %q exists; choose another id", p.ID).With("field", "id")
		}
		if err := reuseRetired(tx.Tx, call.Principal, p.ID); err != nil {
			return err
		}
		if err := savePlan(tx.Tx, p); err != nil {
			return err
		}
		// Its maker owns it (issue 13, item 5).
		if err := tx.SetJSON(aclKey(p.ID), access.New(call.Principal)); err != nil {
			return err
		}
		EventPlanChanged.Publish(tx, pl.audience(p.ID), PlanChangedEvent{PlanID: p.ID, Change: "created"})
		_, err := tx.TraceAbout(call, about(p.ID), "plan.created", fmt.Sprintf("plan %s created (%s): %d subtasks for %q", p.ID, p.Strategy, len(p.Subtasks), llm.Truncate(p.Goal, 80)), nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// maxSlug bounds a readable id made from a file name or a goal.
const maxSlug = 40

// slug makes a readable id of text: lower-case letters and digits, words
// joined by '-', at most maxSlug bytes ("" when text has none).
func slug(text string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			if b.Len()+utf8.RuneLen(r) > maxSlug {
				return b.String()
			}
			b.WriteRune(r)
		default:
			dash = true
		}
	}
	return b.String()
}

// storeNamed stores p under hint, or hint-2, hint-3... the first id no
// plan has (nor a deleted plan of another agent had).
func (pl *Planner) storeNamed(ctx context.Context, call action.Call, p *Plan, hint string) (*Plan, error) {
	for n := 1; n <= 100; n++ {
		p.ID = hint
		if n > 1 {
			p.ID = fmt.Sprintf("%s-%d", hint, n)
		}
		stored, err := pl.store(ctx, call, p)
		if errs.KindOf(err) != errs.Conflict || errs.As(err).Details["field"] != "id" {
			return stored, err
		}
	}
	p.ID = "" // a hundred plans of that name: a UUID
	return pl.store(ctx, call, p)
}

// Decompose asks the model to break a goal into a plan, and stores it.
func (pl *Planner) Decompose(ctx context.Context, call action.Call, goal, strategy string, maxDepth int, id string) (*Plan, error) {
	if strings.TrimSpace(goal) == "" {
		return nil, kit.Validation("goal", "give the goal to decompose")
	}
	if strategy == "" {
		strategy = "flat"
	}
	if !slices.Contains(Strategies, strategy) {
		return nil, kit.Validation("strategy", "unknown strategy %q; use flat, hierarchical or iterative", strategy)
	}
	if maxDepth < 0 {
		return nil, kit.Validation("max_depth", "must be 1 or more")
	}
	if maxDepth == 0 {
		maxDepth = 2
	}
	subtasks, err := pl.decompose(ctx, byDecompose, goal, strategy, maxDepth, "")
	if err != nil {
		return nil, err
	}
	p := &Plan{ID: id, Goal: goal, Strategy: strategy, Subtasks: subtasks, Status: "pending", MaxReplans: pl.opts.MaxReplans,
		Provider: pl.env.LLM.Info().Provider}
	return pl.store(ctx, call, p)
}

// Replan replaces a plan's unfinished subtasks with new ones from the model
// (the one that decomposed it), keeping the completed ones and their
// results. Past max_replans it is a MaxReplansExceededError and the plan
// stays as it was.
func (pl *Planner) Replan(ctx context.Context, call action.Call, id string) (*Plan, error) {
	// Hold the plan while the model is asked, so that no run starts on the
	// version being replaced (plan.cancel interrupts the replan).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !pl.claim(id, nil, cancel) {
		return nil, errs.New(errs.Conflict, "plan %q is running; it replans itself under on_subtask_failure replan, or cancel it first", id).
			With("field", "plan_id")
	}
	defer pl.release(id)
	var p *Plan
	err := pl.env.Store.View(func(tx *storage.Tx) error {
		var err error
		p, err = loadPlan(tx, id)
		return err
	})
	if isUnreadable(err) {
		return nil, unreadablePlan(id, err)
	} else if err != nil {
		return nil, err
	}
	if p, err = pl.replannedBy(ctx, byReplan, p, principalOf(call)); err != nil {
		return nil, err
	}
	err = pl.env.Update(ctx, func(tx *kit.Txn) error {
		if err := savePlan(tx.Tx, p); err != nil {
			return err
		}
		EventPlanChanged.Publish(tx, pl.audience(p.ID), PlanChangedEvent{PlanID: p.ID, Change: "replanned"})
		_, err := tx.TraceAbout(call, about(p.ID), "plan.replanned", fmt.Sprintf("plan %s replanned (%d of %d)", p.ID, p.ReplanCount, p.MaxReplans), nil)
		return err
	})
	return p, err
}

// replanned is replannedBy for a run's replan (on_subtask_failure replan).
func (pl *Planner) replanned(ctx context.Context, p *Plan, principal string) (*Plan, error) {
	return pl.replannedBy(ctx, byExecute, p, principal)
}

// replannedBy asks for new subtasks on behalf of by and returns the plan
// with them in place of the unfinished ones (p itself is not changed).
func (pl *Planner) replannedBy(ctx context.Context, by asker, p *Plan, principal string) (*Plan, error) {
	if p.ReplanCount >= p.MaxReplans {
		return nil, errs.New(errs.MaxReplansExceeded, "plan %s was replanned %d times; one more (%d > %d) exceeds max_replans; it stays as it is",
			p.ID, p.ReplanCount, p.ReplanCount+1, p.MaxReplans).
			With("replan_count", p.ReplanCount).With("max_replans", p.MaxReplans).With("attempted", p.ReplanCount+1)
	}
	if p.Provider != "" && p.Provider != "manual" && pl.env.LLM.Info().Provider != p.Provider {
		pl.env.Log.Warn("replanning with another model than decomposed the plan", "plan", p.ID, "then", p.Provider, "now", pl.env.LLM.Info().Provider)
	}
	strategy := p.Strategy
	if strategy == "manual" || strategy == "" {
		strategy = "flat"
	}
	fresh, err := pl.decompose(ctx, by, p.Goal, strategy, 2, replanContext(p, principal))
	if err != nil {
		return nil, err
	}
	var kept []*Subtask
	used := map[string]bool{}
	for _, s := range p.Subtasks {
		if s.Status == Completed {
			kept = append(kept, s)
			used[s.ID] = true
		}
	}
	renamed := map[string]string{}
	for _, s := range fresh {
		if used[s.ID] {
			nid := uniqueID(s.ID, used)
			renamed[s.ID] = nid
			s.ID = nid
		}
		used[s.ID] = true
	}
	for _, s := range fresh {
		for i, d := range s.Dependencies {
			if nid, ok := renamed[d]; ok {
				s.Dependencies[i] = nid
			}
		}
	}
	next := *p
	next.Subtasks = append(kept, fresh...)
	next.ReplanCount++
	if p.Provider == "" {
		next.Provider = pl.env.LLM.Info().Provider
	}
	if _, err := next.Validate(); err != nil {
		return nil, err
	}
	return &next, nil
}

// Who may do what with a plan (issue 13, item 5). Every plan has an owner —
// the principal whose plan.create or plan.decompose made it — and an
// access.ACL, kept in a record of its own (plan/<id>/acl) rather than in
// the plan: plan results stay as they were, and a plan read back from a
// checkpoint file can never bring its own access list. A plan stored
// before plans had owners has no such record and belongs to
// access.LegacyOwner.

// planObject names a plan for access errors and the trace.
func planObject(id string) access.Object {
	return access.Object{Type: "plan", ID: id, ShareAction: "plan.share"}
}

func aclKey(id string) []byte { return storage.Key(storage.PrefixPlan, id, "acl") }

// errACLUnreadable marks a plan whose access list cannot be read: nobody
// but access.LegacyOwner (who runs the data directory) may then touch it,
// and only to delete it.
var errACLUnreadable = errors.New("its access list is unreadable")

// loadACL reads a plan's access list; NotFound if there is no plan id.
func loadACL(tx *storage.Tx, id string) (access.ACL, error) {
	if ok, err := tx.Has(planKey(id)); err != nil {
		return access.ACL{}, err
	} else if !ok {
		return access.ACL{}, errs.New(errs.NotFound, "no plan %q (plan.list lists them)", id).With("field", "plan_id")
	}
	var acl access.ACL
	switch err := tx.GetJSON(aclKey(id), &acl); {
	case errors.Is(err, storage.ErrNotFound):
		return access.ACL{}, nil // stored before plans had owners
	case err != nil:
		return access.ACL{}, errACLUnreadable
	}
	return acl, nil
}

// authorize reads plan id's access list inside tx and returns it, or a
// PermissionError unless call's principal may do op on the plan.
func authorize(tx *storage.Tx, call action.Call, id, op string) (access.ACL, error) {
	acl, err := loadACL(tx, id)
	if errors.Is(err, errACLUnreadable) {
		if op == access.Delete && call.Principal == access.LegacyOwner {
			return access.ACL{}, nil
		}
		return acl, unreadablePlan(id, err)
	} else if err != nil {
		return acl, err
	}
	return acl, access.Check(call.Principal, acl, op, planObject(id), call.Clock.Now())
}

// allow checks, in a read transaction of its own, that call's principal may
// do op on plan id; a refusal is traced as access_denied (nothing was
// written, so nothing is rolled back) and returned.
func (pl *Planner) allow(ctx context.Context, call action.Call, id, op string) (access.ACL, error) {
	if id == "" {
		return access.ACL{}, kit.Validation("plan_id", "give the plan")
	}
	var acl access.ACL
	err := pl.env.Store.View(func(tx *storage.Tx) error {
		var err error
		acl, err = authorize(tx, call, id, op)
		return err
	})
	return acl, pl.afterFailure(ctx, call, err)
}

// afterFailure records in the trace what a refused call leaves behind
// although it changed nothing: its denial (kit.Env.TraceFailure). It
// returns err.
func (pl *Planner) afterFailure(ctx context.Context, call action.Call, err error) error {
	if err == nil {
		return nil
	}
	return pl.env.TraceFailure(ctx, call, err)
}

// about is the trace subject of plan id: its entries show to whoever may
// read the plan.
func about(id string) trace.Subject { return trace.Subject{Type: "plan", ID: id} }

// audience is who sees an event about plan id: whoever may read the plan
// when the event is delivered (a deleted plan's last readers too). It is
// asked only of subscribers, so a run that nobody watches pays nothing.
func (pl *Planner) audience(id string) events.Audience {
	return events.Only().Or(pl.env.Readable(func(tx *storage.Tx, principal string) (bool, error) {
		return canRead(tx, principal, id)
	}))
}

// canRead is the plan read check other subsystems ask through
// env.Access ("may principal read plan id?"). A deleted plan is read by
// its retired access list: the trace's entries about it stay its owner's.
func canRead(tx *storage.Tx, principal, id string) (bool, error) {
	acl, err := loadACL(tx, id)
	switch {
	case errs.KindOf(err) == errs.NotFound:
		retired, ok, err := loadRetired(tx, id)
		return ok && retired.Can(principal, access.Read), err
	case errors.Is(err, errACLUnreadable):
		return false, nil
	case err != nil:
		return false, err
	}
	return acl.Can(principal, access.Read), nil
}

// retiredKey holds a deleted plan's access list. The trace keeps entries
// about a plan after it is deleted; without it, whoever reused the id would
// read them as entries about their own plan.
func retiredKey(id string) []byte { return storage.Key(storage.PrefixIndex, "plan retired", id) }

// loadRetired reads the access list plan id had when it was deleted (ok
// false when no plan of that id was deleted).
func loadRetired(tx *storage.Tx, id string) (acl access.ACL, ok bool, err error) {
	switch err := tx.GetJSON(retiredKey(id), &acl); {
	case errors.Is(err, storage.ErrNotFound):
		return acl, false, nil
	case err != nil:
		return acl, false, err
	}
	return acl, true, nil
}

// reuseRetired lets principal give a new plan the id of a deleted one only
// if it owned that one (its trace entries then stay with their owner), and
// forgets the retired access list.
func reuseRetired(tx *storage.Tx, principal, id string) error {
	retired, ok, err := loadRetired(tx, id)
	if err != nil || !ok {
		return err
	}
	if retired.OwnerOf() != principal {
		return errs.New(errs.Conflict, "the id %q belonged to another agent's plan, since deleted; choose another id", id).With("field", "id")
	}
	return tx.Delete(retiredKey(id))
}

// unreadablePlan is the error of a plan whose stored record cannot be
// read: it names the plan and the way out.
func unreadablePlan(id string, err error) error {
	msg := err.Error()
	if e := errs.As(err); e != nil {
		msg = e.Message
	}
	return errs.New(errs.Checkpoint, "plan %q is unreadable (%s); plan.delete removes it", id, msg).With("plan_id", id)
}

// isUnreadable reports whether err says a stored plan could not be decoded
// (rather than, say, that a checkpoint file could not be written).
func isUnreadable(err error) bool {
	e := errs.As(err)
	return e != nil && e.Kind == errs.Checkpoint &&
		(strings.HasPrefix(e.Message, "checkpoint unreadable") || strings.HasPrefix(e.Message, "checkpoint of plan"))
}

// ranBy is what a subtask records as who ran it: the principal, or ""
// for access.LegacyOwner (the default agent), so that single-agent plans
// are stored and shown exactly as before owners existed.
func ranBy(call action.Call) string {
	if call.Principal == access.LegacyOwner {
		return ""
	}
	return call.Principal
}

// runnerOf is the principal a subtask ran as ("" is access.LegacyOwner).
func runnerOf(s *Subtask) string {
	if s.RanBy == "" {
		return access.LegacyOwner
	}
	return s.RanBy
}

// redact hides from principal the run outputs (result, delta, error) of
// the subtasks another principal ran: a subtask runs as whoever executed
// the plan, and engram does not know what its action read, so only the
// plan's owner and the principal it ran as see what came out of it. It
// changes p (always a copy) and returns it.
//
// The owner too sees only what ran as itself: a plan it wrote and someone
// else ran has read with that one's authority.
func redact(p *Plan, acl access.ACL, principal string) *Plan {
	if p == nil {
		return p
	}
	for _, s := range p.Subtasks {
		outputs := s.Result != nil || s.Delta != nil || (s.Error != "" && s.Attempts > 0)
		if outputs && runnerOf(s) != principal {
			s.Result, s.Delta, s.Error, s.Redacted = nil, nil, "", true
		}
	}
	return p
}

// Share grants principal perms on plan id (replacing what it had) and
// returns the plan's access list.
func (pl *Planner) Share(ctx context.Context, call action.Call, id, principal string, perms []string) (access.ACL, error) {
	return pl.changeACL(ctx, call, id, "plan.shared", principal, func(acl *access.ACL, now time.Time) (string, error) {
		if err := acl.Grant(call.Principal, principal, perms, planObject(id), now); err != nil {
			return "", err
		}
		clean, _ := access.CleanPermissions("permissions", perms) // Grant checked them
		return fmt.Sprintf("plan %s shared with %s (%s)", id, principal, strings.Join(clean, ", ")), nil
	})
}

// Revoke removes principal's grant on plan id and returns the plan's
// access list.
func (pl *Planner) Revoke(ctx context.Context, call action.Call, id, principal string) (access.ACL, error) {
	return pl.changeACL(ctx, call, id, "plan.revoked", principal, func(acl *access.ACL, now time.Time) (string, error) {
		if err := acl.Revoke(call.Principal, principal, planObject(id), now); err != nil {
			return "", err
		}
		return fmt.Sprintf("plan %s: access revoked for %s", id, principal), nil
	})
}

// changeACL edits plan id's access list in one transaction, and traces
// the change (or the denial, after the rollback). principal is the agent
// whose access it changes.
func (pl *Planner) changeACL(ctx context.Context, call action.Call, id, kind, principal string, edit func(*access.ACL, time.Time) (string, error)) (access.ACL, error) {
	if id == "" {
		return access.ACL{}, kit.Validation("plan_id", "give the plan")
	}
	var acl access.ACL
	err := pl.env.Update(ctx, func(tx *kit.Txn) error {
		var err error
		if acl, err = loadACL(tx.Tx, id); errors.Is(err, errACLUnreadable) {
			return unreadablePlan(id, err)
		} else if err != nil {
			return err
		}
		if acl.Owner == "" {
			acl.Owner = access.LegacyOwner // written down from now on
		}
		before := events.Only(acl.Readers()...)
		msg, err := edit(&acl, call.Clock.Now())
		if err != nil {
			return err
		}
		if err := tx.SetJSON(aclKey(id), acl); err != nil {
			return err
		}
		// Whoever gained or lost the plan sees it come or go at once, and
		// the agent whose access changed hears of it whichever way.
		EventPlanChanged.Publish(tx, before.And(events.Only(acl.Readers()...)).And(events.Only(principal)), PlanChangedEvent{PlanID: id, Change: strings.TrimPrefix(kind, "plan.")})
		_, err = tx.TraceAbout(call, about(id), kind, msg, map[string]any{"plan_id": id})
		return err
	})
	if err != nil {
		return access.ACL{}, pl.afterFailure(ctx, call, err)
	}
	return acl, nil
}

// Delete removes a plan: its record, its subtasks' progress records and
// its access list. A running plan is refused (plan.cancel stops it first):
// deleting under a run would have the run write the plan back.
func (pl *Planner) Delete(ctx context.Context, call action.Call, id string) (DeleteResult, error) {
	if _, err := pl.allow(ctx, call, id, access.Delete); err != nil {
		return DeleteResult{}, err
	}
	// Hold the plan, so that no run starts while it goes (the access list
	// is checked again in the deleting transaction).
	if !pl.claim(id, nil, func() {}) {
		return DeleteResult{}, errs.New(errs.Conflict, "plan %q is running; stop it with plan.cancel, then delete it", id).With("field", "plan_id")
	}
	defer pl.release(id)
	res := DeleteResult{PlanID: id}
	err := pl.env.Update(ctx, func(tx *kit.Txn) error {
		acl, err := authorize(tx.Tx, call, id, access.Delete)
		if err != nil {
			return err
		}
		if p, err := loadPlan(tx.Tx, id); err != nil {
			res.Unreadable = true
		} else {
			res.Goal, res.Subtasks = p.Goal, len(p.Subtasks)
		}
		var keys [][]byte
		if err := tx.Keys(storage.Prefix(storage.PrefixKey(storage.PrefixPlan, id)), func(k []byte) error {
			keys = append(keys, k)
			return nil
		}); err != nil {
			return err
		}
		keys = append(keys, planKey(id))
		for _, k := range keys {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		res.Records = len(keys)
		if err := tx.SetJSON(retiredKey(id), acl); err != nil {
			return err
		}
		EventPlanChanged.Publish(tx, events.Only(acl.Readers()...), PlanChangedEvent{PlanID: id, Change: "deleted"})
		_, err = tx.Trace(call, "plan.deleted", fmt.Sprintf("plan %s deleted (%d records)", id, len(keys)), map[string]any{"plan_id": id})
		return err
	})
	if err != nil {
		return DeleteResult{}, pl.afterFailure(ctx, call, err)
	}
	return res, nil
}
