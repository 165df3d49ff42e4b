package core

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/errs"
)

// TestSectionDecodesIntoItsTypeOrSaysWhy: a provider's section decodes into
// the provider's type; one that does not is an error naming the section and
// the turn, never a silently empty section.
func TestSectionDecodesIntoItsTypeOrSaysWhy(t *testing.T) {
	wc := WorkingContext{TurnID: "t1", Sections: map[string]json.RawMessage{
		"cortex": json.RawMessage(`{"count": 2, "items": []}`),
		"broken": json.RawMessage(`{"count": "two"}`),
	}}
	var good cortex.ContextSection
	if ok, err := wc.Section("cortex", &good); !ok || err != nil || good.Count != 2 {
		t.Errorf("cortex section: ok %v, err %v, %+v", ok, err, good)
	}
	var none cortex.ContextSection
	if ok, err := wc.Section("history", &none); ok || err != nil {
		t.Errorf("an absent section: ok %v, err %v", ok, err)
	}
	var bad cortex.ContextSection
	ok, err := wc.Section("broken", &bad)
	if !ok || errs.KindOf(err) != errs.Internal || !strings.Contains(err.Error(), "broken section of turn t1") {
		t.Errorf("a section that does not decode: ok %v, err %v", ok, err)
	}
}
