package events

import (
	"testing"
)

func TestAudienceIncludesOnlyWhomItNames(t *testing.T) {
	checked := map[string]int{}
	carol := func(p string) bool { checked[p]++; return p == "carol" }
	cases := []struct {
		name string
		a    Audience
		in   []string
		out  []string
	}{
		{"zero", Audience{}, nil, []string{"ann", "", "local"}},
		{"everyone", Everyone(), []string{"ann", "bob", ""}, nil},
		{"only", Only("ann", "bob"), []string{"ann", "bob"}, []string{"carol", ""}},
		{"or", Only("ann").Or(carol), []string{"ann", "carol"}, []string{"bob"}},
		{"and", Only("ann").And(Only("bob")), []string{"ann", "bob"}, []string{"carol"}},
		{"and checks", Only("ann").And(Only().Or(carol)), []string{"ann", "carol"}, []string{"bob"}},
		{"and everyone", Only("ann").And(Everyone()), []string{"ann", "zed"}, nil},
	}
	for _, c := range cases {
		for _, p := range c.in {
			if !c.a.Includes(p) {
				t.Errorf("%s: %q is not included", c.name, p)
			}
			if !(Event{Audience: c.a}).VisibleTo(p) {
				t.Errorf("%s: the event is not visible to %q", c.name, p)
			}
		}
		for _, p := range c.out {
			if c.a.Includes(p) {
				t.Errorf("%s: %q is included", c.name, p)
			}
		}
	}
	if checked["ann"] != 0 {
		t.Errorf("the check was asked about ann, whom the list admits: %v", checked)
	}
}

func TestAndDoesNotChangeEitherAudience(t *testing.T) {
	base := Only("ann")
	base.principals = append(make([]string, 0, 4), "ann")
	both := base.And(Only("bob"))
	other := base.And(Only("carol"))
	if !both.Includes("bob") || both.Includes("carol") {
		t.Errorf("ann+bob: bob %v, carol %v", both.Includes("bob"), both.Includes("carol"))
	}
	if other.Includes("bob") || !other.Includes("carol") {
		t.Errorf("ann+carol: bob %v, carol %v", other.Includes("bob"), other.Includes("carol"))
	}
	if base.Includes("bob") || base.Includes("carol") {
		t.Error("And widened its receiver")
	}
}
