package trace

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/storage"
)

// ActionConfigure is the trace.configure action. Set how much of the trace
// is kept, and how repeated access denials are counted; with no arguments,
// show it.
var ActionConfigure = action.NewRef[ConfigureArgs, RetentionResult]("trace.configure")

// ConfigureArgs is trace.configure's arguments. Each one given replaces
// that bound; 0 removes it.
type ConfigureArgs struct {
	MaxEntries          *int `json:"max_entries,omitempty" help:"keep at most this many entries, the newest (default 100000; 0: no limit by count)"`
	MaxAgeDays          *int `json:"max_age_days,omitempty" help:"drop entries older than this many days, by the engine clock (default 30; 0: no limit by age)"`
	DenialWindowMinutes *int `json:"denial_window_minutes,omitempty" help:"count an access denial on the entry of the same one (same agent, operation, object) if that was at most this many minutes ago (default 60; 0: an entry per denial)"`
}

// RetentionResult is trace.configure's result: the retention in force.
type RetentionResult struct {
	MaxEntries          int `json:"max_entries"`
	MaxAgeDays          int `json:"max_age_days"`
	DenialWindowMinutes int `json:"denial_window_minutes"`
}

func resultOf(r Retention) RetentionResult {
	return RetentionResult{MaxEntries: int(r.MaxEntries), MaxAgeDays: int(r.MaxAge / (24 * time.Hour)), DenialWindowMinutes: int(r.DenialWindow / time.Minute)}
}

func (r RetentionResult) retention() Retention {
	return Retention{MaxEntries: uint64(r.MaxEntries), MaxAge: time.Duration(r.MaxAgeDays) * 24 * time.Hour, DenialWindow: time.Duration(r.DenialWindowMinutes) * time.Minute}
}

func retentionKey() []byte { return storage.Key(storage.PrefixIndex, indexSpace, "retention") }

// loadRetention reads the configured retention (DefaultRetention if none
// was configured).
func (l *Log) loadRetention() error {
	return l.store.View(func(tx *storage.Tx) error {
		var r RetentionResult
		err := tx.GetJSON(retentionKey(), &r)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err == nil {
			l.SetRetention(r.retention())
		}
		return err
	})
}

// Register adds trace.configure to reg.
func (l *Log) Register(reg *action.Registry) {
	ActionConfigure.Register(reg, action.Spec{Summary: "Set how much of the trace is kept and how repeated denials are counted; without arguments, show it"}, l.actConfigure)
}

// actConfigure: only the default agent may change the retention — it
// decides how long every agent's actions stay on record — and the change
// is itself traced. Anyone may see it.
func (l *Log) actConfigure(ctx context.Context, call action.Call, a ConfigureArgs) (RetentionResult, error) {
	cur := resultOf(l.Retention())
	if a.MaxEntries == nil && a.MaxAgeDays == nil && a.DenialWindowMinutes == nil {
		return cur, nil
	}
	if call.Principal != access.LegacyOwner && call.Principal != "" {
		return cur, errs.New(errs.Permission, "%s may not change the trace's retention: it bounds every agent's record; only the default agent (%s) may",
			call.Principal, access.LegacyOwner).With("principal", call.Principal).With("operation", "configure")
	}
	next := cur
	for _, f := range []struct {
		field string
		arg   *int
		to    *int
		max   int
	}{
		{"max_entries", a.MaxEntries, &next.MaxEntries, 1 << 40},
		{"max_age_days", a.MaxAgeDays, &next.MaxAgeDays, 100 * 365},
		{"denial_window_minutes", a.DenialWindowMinutes, &next.DenialWindowMinutes, 7 * 24 * 60},
	} {
		if f.arg == nil {
			continue
		}
		if *f.arg < 0 || *f.arg > f.max {
			return cur, errs.New(errs.Validation, "%s: must be from 0 (no limit) to %d, not %d", f.field, f.max, *f.arg).With("field", f.field)
		}
		*f.to = *f.arg
	}
	err := l.store.Update(ctx, func(tx *storage.Tx) error {
		if err := tx.SetJSON(retentionKey(), next); err != nil {
			return err
		}
		_, err := l.Append(tx, Entry{TurnID: call.Turn, Kind: "trace.configure", Principal: call.Principal, At: call.Clock.Now(),
			Message: fmt.Sprintf("trace retention: at most %d entries, %d days; denials counted within %d min", next.MaxEntries, next.MaxAgeDays, next.DenialWindowMinutes)})
		return err
	})
	if err != nil {
		return cur, err
	}
	l.SetRetention(next.retention())
	return next, nil
}
