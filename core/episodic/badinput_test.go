package episodic_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/storage"
)

// storeKeys returns every key and value of the store but the trace and the
// sequences (which record attempts, failed ones included).
func storeKeys(t testing.TB, st *storage.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := st.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Prefix(nil), func(k, v []byte) error {
			key := string(k)
			if strings.HasPrefix(key, storage.PrefixTrace) || strings.HasPrefix(key, storage.PrefixIndex+"trace/") ||
				strings.HasPrefix(key, storage.PrefixSeq) || bytes.HasPrefix(k, []byte("!badger!")) {
				return nil
			}
			out[key] = string(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBadArgumentsFailWithoutWriting: every thread.* and episode.* action with wrong arguments
// fails with the right kind, a message that names the field and says what
// to do, and changes nothing stored (every key and value compared, the
// trace and sequences aside).
func TestBadArgumentsFailWithoutWriting(t *testing.T) {
	r := newRig(t)
	first := r.send("sms", "", "What's the weather in New York?")
	r.answer("sms", first.ThreadID, "Sunny, 72°F.")
	r.at("10:45")
	second := r.send("sms", "", "Oh, and what is it on Thursday?")
	if second.Decision == nil {
		t.Fatalf("no linking decision: %+v", second)
	}
	r.ep.Settle()
	th, dec := first.ThreadID, second.Decision.ID

	cases := []struct {
		name      string
		action    string
		args      string
		kind      errs.Kind
		fragments []string
	}{
		// thread.message
		{"unknown channel", "thread.message", `{"channel": "fax", "text": "hi"}`, errs.Validation, []string{"channel", `"fax"`, "web or app", "sms, whatsapp or voice"}},
		{"channel in another case", "thread.message", `{"channel": "SMS", "text": "hi"}`, errs.Validation, []string{"channel", `"SMS"`}},
		{"missing channel", "thread.message", `{"text": "hi"}`, errs.Validation, []string{"channel"}},
		{"empty text", "thread.message", `{"channel": "sms", "text": ""}`, errs.Validation, []string{"text"}},
		{"blank text", "thread.message", `{"channel": "sms", "text": " \n\t "}`, errs.Validation, []string{"text", "needs text"}},
		{"missing text", "thread.message", `{"channel": "web"}`, errs.Validation, []string{"text"}},
		{"bad speaker", "thread.message", `{"channel": "sms", "text": "beep", "speaker": "robot"}`, errs.Validation, []string{"speaker", `"robot"`, "user or assistant"}},
		{"speaker system", "thread.message", `{"channel": "sms", "text": "beep", "speaker": "system"}`, errs.Validation, []string{"speaker", "user or assistant"}},
		{"unknown thread_id", "thread.message", `{"channel": "web", "thread_id": "nope", "text": "hi"}`, errs.NotFound, []string{"thread_id", `"nope"`, "thread.list"}},
		{"unknown thread_id, assistant", "thread.message", `{"channel": "web", "thread_id": "nope", "text": "hi", "speaker": "assistant"}`, errs.NotFound, []string{"thread_id", `"nope"`}},
		{"control characters in thread_id", "thread.message", `{"channel": "web", "thread_id": "a\u0001b", "text": "hi"}`, errs.Validation, []string{"thread_id", "control characters"}},
		{"unknown field", "thread.message", `{"channel": "sms", "text": "hi", "colour": "red"}`, errs.Validation, []string{"colour"}},
		{"text of the wrong type", "thread.message", `{"channel": "sms", "text": 42}`, errs.Validation, []string{"text"}},
		{"channel of the wrong type", "thread.message", `{"channel": ["sms"], "text": "hi"}`, errs.Validation, []string{"channel"}},
		{"args not an object", "thread.message", `["sms", "hi"]`, errs.Validation, nil},
		{"multi-line title", "thread.message", `{"channel": "web", "text": "hi", "title": "a\nb"}`, errs.Validation, []string{"title", "one line"}},
		{"title too long", "thread.message", `{"channel": "web", "text": "hi", "title": "` + strings.Repeat("x", 201) + `"}`, errs.Validation, []string{"title", "200"}},

		// thread.configure
		{"timeout 0", "thread.configure", `{"thread_id": "` + th + `", "inactivity_timeout_minutes": 0}`, errs.Validation, []string{"inactivity_timeout_minutes"}},
		{"timeout negative", "thread.configure", `{"thread_id": "` + th + `", "inactivity_timeout_minutes": -5}`, errs.Validation, []string{"inactivity_timeout_minutes", "-5", "from 1"}},
		{"timeout over a year", "thread.configure", `{"thread_id": "` + th + `", "inactivity_timeout_minutes": 600000}`, errs.Validation, []string{"inactivity_timeout_minutes", "525600"}},
		{"timeout a fraction", "thread.configure", `{"thread_id": "` + th + `", "inactivity_timeout_minutes": 2.5}`, errs.Validation, []string{"inactivity_timeout_minutes"}},
		{"timeout a string", "thread.configure", `{"thread_id": "` + th + `", "inactivity_timeout_minutes": "30"}`, errs.Validation, []string{"inactivity_timeout_minutes"}},
		{"timeout missing", "thread.configure", `{"thread_id": "` + th + `"}`, errs.Validation, []string{"inactivity_timeout_minutes"}},
		{"configure unknown thread", "thread.configure", `{"thread_id": "nope", "inactivity_timeout_minutes": 45}`, errs.NotFound, []string{"thread_id", `"nope"`, "thread.list"}},
		{"configure without thread", "thread.configure", `{"inactivity_timeout_minutes": 45}`, errs.Validation, []string{"thread_id"}},
		{"configure control characters", "thread.configure", `{"thread_id": "x\u007f", "inactivity_timeout_minutes": 45}`, errs.Validation, []string{"thread_id", "control characters"}},

		// readers
		{"list with a field", "thread.list", `{"status": "active"}`, errs.Validation, []string{"status"}},
		{"get unknown thread", "thread.get", `{"thread_id": "nope"}`, errs.NotFound, []string{"thread_id", `"nope"`, "thread.list"}},
		{"get without thread", "thread.get", `{}`, errs.Validation, []string{"thread_id"}},
		{"get control characters", "thread.get", `{"thread_id": "a\nb"}`, errs.Validation, []string{"thread_id", "control characters"}},
		{"get include_archived a string", "thread.get", `{"thread_id": "` + th + `", "include_archived": "yes"}`, errs.Validation, []string{"include_archived"}},
		{"context unknown thread", "episode.context", `{"thread_id": "nope"}`, errs.NotFound, []string{"thread_id", `"nope"`}},
		{"context unknown channel", "episode.context", `{"thread_id": "` + th + `", "channel": "fax"}`, errs.Validation, []string{"channel", `"fax"`, "web, app, sms, whatsapp or voice"}},
		{"context without thread", "episode.context", `{"channel": "sms"}`, errs.Validation, []string{"thread_id"}},
		{"episodes of an unknown thread", "episode.list", `{"thread_id": "nope"}`, errs.NotFound, []string{"thread_id", `"nope"`}},
		{"unknown episode", "episode.get", `{"episode_id": "nope"}`, errs.NotFound, []string{"episode_id", `"nope"`, "episode.list"}},
		{"episode without id", "episode.get", `{}`, errs.Validation, []string{"episode_id"}},
		{"decisions of an unknown thread", "episode.decisions", `{"thread_id": "nope"}`, errs.NotFound, []string{"thread_id", `"nope"`}},
		{"tuning with a field", "episode.tuning", `{"threshold": 0.8}`, errs.Validation, []string{"threshold"}},

		// episode.compact
		{"compact unknown thread", "episode.compact", `{"thread_id": "nope"}`, errs.NotFound, []string{"thread_id", `"nope"`, "thread.list"}},
		{"compact without thread", "episode.compact", `{}`, errs.Validation, []string{"thread_id"}},
		{"compact control characters", "episode.compact", `{"thread_id": "\u0000"}`, errs.Validation, []string{"thread_id", "control characters"}},

		// episode.outcome and episode.tune
		{"outcome maybe", "episode.outcome", `{"decision_id": "` + dec + `", "outcome": "maybe"}`, errs.Validation, []string{"outcome", `"maybe"`, "correct or incorrect"}},
		{"outcome in another case", "episode.outcome", `{"decision_id": "` + dec + `", "outcome": "CORRECT"}`, errs.Validation, []string{"outcome", "correct or incorrect"}},
		{"outcome missing", "episode.outcome", `{"decision_id": "` + dec + `"}`, errs.Validation, []string{"outcome"}},
		{"outcome a bool", "episode.outcome", `{"decision_id": "` + dec + `", "outcome": true}`, errs.Validation, []string{"outcome"}},
		{"unknown decision", "episode.outcome", `{"decision_id": "nope", "outcome": "correct"}`, errs.NotFound, []string{"decision_id", `"nope"`, "episode.decisions"}},
		{"decision control characters", "episode.outcome", `{"decision_id": "d\u0007", "outcome": "correct"}`, errs.Validation, []string{"decision_id", "control characters"}},
		{"tune with no outcomes", "episode.tune", `{}`, errs.Validation, []string{"episode.outcome", "correct|incorrect", "then tune"}},
		{"tune with a field", "episode.tune", `{"threshold": 0.9}`, errs.Validation, []string{"threshold"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := storeKeys(t, r.e.Env().Store)
			res, err := r.Try(agent, c.action, c.args)
			after := storeKeys(t, r.e.Env().Store)
			if err == nil {
				t.Fatalf("%s %s succeeded: %s", c.action, c.args, res)
			}
			e := errs.As(err)
			t.Logf("%s → %s: %s", c.action, e.Kind, e.Message)
			if e.Kind != c.kind {
				t.Errorf("%s %s: kind %s, want %s (%v)", c.action, c.args, e.Kind, c.kind, err)
			}
			for _, f := range c.fragments {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("%s %s: %q does not say %q", c.action, c.args, err, f)
				}
			}
			if d := diffKeys(before, after); len(d) > 0 {
				t.Errorf("%s %s changed the store: %v", c.action, c.args, d)
			}
		})
	}
}
