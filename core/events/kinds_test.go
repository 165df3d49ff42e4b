package events

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/clock"
)

type notePayload struct {
	Text  string   `json:"text"`
	Lines []string `json:"lines"`
}

var (
	testNote     = Define[notePayload]("test.note", "when a test says so")
	testProgress = DefineProgress[int]("test.progress", "as a test counts")
)

func newTestBroker() *Broker {
	return NewBroker(clock.NewFixed(time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)))
}

func TestKindPublishesItsTypedPayload(t *testing.T) {
	b := newTestBroker()
	tap := b.Tap(4)
	defer tap.Close()
	testNote.Publish(b, Everyone(), notePayload{Text: "hi", Lines: []string{"a"}})
	testProgress.Publish(b, Everyone(), 7)
	evs := tap.Drain()
	if len(evs) != 2 {
		t.Fatalf("%d events, want 2", len(evs))
	}
	note, ok := testNote.Of(evs[0])
	if !ok || note.Text != "hi" || evs[0].Progress {
		t.Errorf("first event %+v: want a final test.note saying hi", evs[0])
	}
	if _, ok := testNote.Of(evs[1]); ok {
		t.Error("test.note's Of accepted a test.progress event")
	}
	if n, ok := testProgress.Of(evs[1]); !ok || n != 7 || !evs[1].Progress {
		t.Errorf("second event %+v: want a progress test.progress of 7", evs[1])
	}
}

func TestPublishingAnotherPayloadTypePanics(t *testing.T) {
	b := newTestBroker()
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "test.note") {
			t.Fatalf("recovered %v, want a panic naming test.note", r)
		}
	}()
	b.Publish("test.note", Everyone(), map[string]any{"text": "untyped"})
}

func TestDefiningAKindTwicePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("a second Define of test.note did not panic")
		}
	}()
	Define[string]("test.note", "again")
}

func TestKindsListsDefinedKindsInOrder(t *testing.T) {
	var names []string
	for _, k := range Kinds() {
		names = append(names, k.Name)
		if k.Name == "test.progress" && (!k.Progress || k.Payload != reflect.TypeFor[int]()) {
			t.Errorf("test.progress described as %+v", k)
		}
	}
	if strings.Join(names, ",") != "test.note,test.progress" {
		t.Errorf("kinds %v, want test.note,test.progress", names)
	}
}

func TestEventSurvivesJSONWithItsPayloadType(t *testing.T) {
	b := newTestBroker()
	ch := b.Subscribe(context.Background(), 4)
	testNote.Publish(b, Everyone(), notePayload{Text: "over the wire", Lines: []string{"x", "y"}})
	sent := <-ch
	raw, err := json.Marshal(sent)
	if err != nil {
		t.Fatal(err)
	}
	var got Event
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	// The audience stays in the publishing process: what crosses a wire
	// was filtered for its reader already.
	if got.Audience.Includes("anyone") {
		t.Error("an audience came over the wire")
	}
	sent.Audience = Audience{}
	if !reflect.DeepEqual(got, sent) {
		t.Errorf("decoded %+v, want %+v", got, sent)
	}
}

func TestEventOfAnUnknownKindKeepsItsDataAsJSON(t *testing.T) {
	var got Event
	if err := json.Unmarshal([]byte(`{"event":"future.kind","seq":3,"at":"2025-11-05T10:00:00Z","data":{"x":1}}`), &got); err != nil {
		t.Fatalf("an unknown kind failed to decode: %v", err)
	}
	if raw, ok := got.Data.(json.RawMessage); !ok || string(raw) != `{"x":1}` || got.Seq != 3 {
		t.Errorf("decoded %+v, want seq 3 with its data as raw JSON", got)
	}
}
