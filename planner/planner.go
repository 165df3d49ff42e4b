//go:build !noplanning

package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
	"github.com/goccy/go-yaml"
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
	return p, err
}

// List returns every plan, newest first.
func (pl *Planner) List() ([]*Plan, error) {
	var ids []string
	err := pl.env.Store.View(func(tx *storage.Tx) error {
		return tx.Keys(storage.Prefix(planPrefix()), func(k []byte) error {
			if parts := storage.SplitKey(storage.PrefixPlan, k); len(parts) == 1 {
				ids = append(ids, parts[0])
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	plans := make([]*Plan, 0, len(ids))
	for _, id := range ids {
		p, err := pl.Get(id)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	slices.SortFunc(plans, func(a, b *Plan) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return plans, nil
}

// Create stores a plan written by hand (or read from a YAML file).
func (pl *Planner) Create(ctx context.Context, call action.Call, req CreateArgs) (*Plan, error) {
	if req.File != "" {
		if req.Goal != "" || len(req.Subtasks) > 0 {
			return nil, kit.Validation("file", "give either file or goal and subtasks, not both")
		}
		var err error
		if req, err = readPlanFile(req.File, req); err != nil {
			return nil, err
		}
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
	return pl.store(ctx, call, p)
}

// readPlanFile reads {goal, subtasks, ...} from a YAML file.
func readPlanFile(path string, req CreateArgs) (CreateArgs, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return req, kit.Validation("file", "cannot read %s: %v", path, err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return req, errs.New(errs.Parse, "%s is not valid YAML: %s", path, yaml.FormatError(err, false, false))
	}
	var fromFile CreateArgs
	if err := action.DecodeStrict(js, &fromFile); err != nil {
		return req, fmt.Errorf("%s: %w", path, err)
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
		if err := savePlan(tx.Tx, p); err != nil {
			return err
		}
		EventPlanChanged.Publish(tx, PlanChangedEvent{PlanID: p.ID, Change: "created"})
		_, err := tx.Trace(call, "plan.created", fmt.Sprintf("plan %s created (%s): %d subtasks for %q", p.ID, p.Strategy, len(p.Subtasks), llm.Truncate(p.Goal, 80)), nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
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
	subtasks, err := pl.decompose(ctx, goal, strategy, maxDepth, "")
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
	if err != nil {
		return nil, err
	}
	if p, err = pl.replanned(ctx, p); err != nil {
		return nil, err
	}
	err = pl.env.Update(ctx, func(tx *kit.Txn) error {
		if err := savePlan(tx.Tx, p); err != nil {
			return err
		}
		EventPlanChanged.Publish(tx, PlanChangedEvent{PlanID: p.ID, Change: "replanned"})
		_, err := tx.Trace(call, "plan.replanned", fmt.Sprintf("plan %s replanned (%d of %d)", p.ID, p.ReplanCount, p.MaxReplans), nil)
		return err
	})
	return p, err
}

// replanned asks for new subtasks and returns the plan with them in place
// of the unfinished ones (p itself is not changed).
func (pl *Planner) replanned(ctx context.Context, p *Plan) (*Plan, error) {
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
	fresh, err := pl.decompose(ctx, p.Goal, strategy, 2, replanContext(p))
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
