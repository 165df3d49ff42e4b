package access_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/storage"
)

var (
	store = access.Object{Type: "memory store", ID: "notes", ShareAction: "memory.share"}
	now   = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
)

func TestOwnerHoldsEveryPermissionAndOthersNone(t *testing.T) {
	a := access.New("alice")
	for _, p := range access.Permissions {
		if !a.Can("alice", p) {
			t.Errorf("owner lacks %s", p)
		}
		if a.Can("bob", p) {
			t.Errorf("stranger holds %s", p)
		}
	}
}

func TestStoredWithoutOwnerBelongsToTheDefaultAgent(t *testing.T) {
	var a access.ACL
	if !a.Can(access.LegacyOwner, access.Delete) || a.Can("bob", access.Read) {
		t.Errorf("an ACL without owner: legacy owner can delete %v, bob can read %v",
			a.Can(access.LegacyOwner, access.Delete), a.Can("bob", access.Read))
	}
	if got := a.Readers(); !slices.Equal(got, []string{access.LegacyOwner}) {
		t.Errorf("readers = %v", got)
	}
}

func TestCheckRefusesWithADenialNamingWhoCanGrant(t *testing.T) {
	a := access.New("alice")
	err := access.Check("bob", a, access.Write, store, now)
	if errs.KindOf(err) != errs.Permission {
		t.Fatalf("Check = %v, want a PermissionError", err)
	}
	for _, want := range []string{"bob", "write", `memory store "notes"`, "alice", "memory.share"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not mention %q", err, want)
		}
	}
	d, ok := access.DenialOf(err)
	if !ok {
		t.Fatal("no denial in the error")
	}
	want := access.Denial{Event: "access_denied", PrincipalID: "bob", ResourceType: "memory store", ResourceID: "notes",
		AttemptedOperation: "write", Timestamp: now, ACLChecked: true, Owner: "alice"}
	if *d != want {
		t.Errorf("denial = %+v, want %+v", *d, want)
	}
}

func TestEveryOperationButReadNeedsReadToo(t *testing.T) {
	a := access.New("alice")
	if err := a.Grant("alice", "bob", []string{access.Write}, store, now); err != nil {
		t.Fatal(err)
	}
	// Write without read is refused as the read it lacks.
	if d, ok := access.DenialOf(access.Check("bob", a, access.Write, store, now)); !ok || d.AttemptedOperation != access.Read {
		t.Errorf("write without read: denial %+v, want one for read", d)
	}
	if err := a.Grant("alice", "bob", []string{access.Write, access.Read}, store, now); err != nil {
		t.Fatal(err)
	}
	if err := access.Check("bob", a, access.Write, store, now); err != nil {
		t.Errorf("write with read refused: %v", err)
	}
	if err := access.Check("bob", a, access.Delete, store, now); err == nil {
		t.Error("delete allowed with read and write only")
	}
}

func TestGrantReplacesAndOrdersPermissions(t *testing.T) {
	a := access.New("alice")
	if err := a.Grant("alice", "bob", []string{"write", "read", "write"}, store, now); err != nil {
		t.Fatal(err)
	}
	if err := a.Grant("alice", "bob", []string{"share", "read"}, store, now); err != nil {
		t.Fatal(err)
	}
	want := []access.Entry{{PrincipalType: "agent", PrincipalID: "bob", Permissions: []string{"read", "share"}}}
	if len(a.Grants) != 1 || !slices.Equal(a.Grants[0].Permissions, want[0].Permissions) || a.Grants[0].PrincipalID != "bob" {
		t.Errorf("grants = %+v, want %+v", a.Grants, want)
	}
}

func TestSharingNeverCreatesMoreAccessThanTheSharerHas(t *testing.T) {
	a := access.New("alice")
	if err := a.Grant("alice", "bob", []string{"read", "share"}, store, now); err != nil {
		t.Fatal(err)
	}
	before := a.Clone()
	cases := []struct {
		name              string
		by, to            string
		perms             []string
		kind              errs.Kind
		mentions          string
		changesNothingToo bool
	}{
		{"grant a permission the sharer lacks", "bob", "carol", []string{"write"}, errs.Permission, `"write"`, true},
		{"raise its own access", "bob", "bob", []string{"read", "write"}, errs.Permission, "its own access", true},
		{"share without the share permission", "carol", "dave", []string{"read"}, errs.Permission, "carol may not share", true},
		{"share with the owner", "alice", "alice", []string{"read"}, errs.Validation, "owns", true},
		{"unknown permission", "alice", "carol", []string{"admin"}, errs.Validation, `"admin"`, true},
		{"no permissions", "alice", "carol", nil, errs.Validation, "permissions", true},
		{"no principal", "alice", "", []string{"read"}, errs.Validation, "principal", true},
	}
	for _, c := range cases {
		err := a.Grant(c.by, c.to, c.perms, store, now)
		if errs.KindOf(err) != c.kind || !strings.Contains(err.Error(), c.mentions) {
			t.Errorf("%s: %v, want a %s mentioning %s", c.name, err, c.kind, c.mentions)
		}
		if !slices.EqualFunc(a.Grants, before.Grants, func(x, y access.Entry) bool {
			return x.PrincipalID == y.PrincipalID && slices.Equal(x.Permissions, y.Permissions)
		}) {
			t.Fatalf("%s changed the grants: %+v", c.name, a.Grants)
		}
	}
	if err := a.Grant("bob", "carol", []string{"read"}, store, now); err != nil {
		t.Errorf("bob sharing what he holds: %v", err)
	}
}

func TestRevokeByOwnerSelfOrAnEqualSharer(t *testing.T) {
	a := access.New("alice")
	for _, g := range []struct {
		who   string
		perms []string
	}{{"bob", []string{"read", "share"}}, {"carol", []string{"read", "write"}}, {"dave", []string{"read"}}} {
		if err := a.Grant("alice", g.who, g.perms, store, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Revoke("bob", "carol", store, now); errs.KindOf(err) != errs.Permission {
		t.Errorf("bob revoking carol's write he lacks: %v", err)
	}
	if err := a.Revoke("bob", "dave", store, now); err != nil {
		t.Errorf("bob revoking dave's read: %v", err)
	}
	if err := a.Revoke("carol", "carol", store, now); err != nil {
		t.Errorf("carol giving up her own access: %v", err)
	}
	if err := a.Revoke("alice", "alice", store, now); errs.KindOf(err) != errs.Validation {
		t.Errorf("revoking the owner: %v", err)
	}
	if err := a.Revoke("alice", "erin", store, now); errs.KindOf(err) != errs.NotFound {
		t.Errorf("revoking an absent grant: %v", err)
	}
	if got := a.Readers(); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Errorf("readers after revokes = %v", got)
	}
}

func TestRegistryAnswersNoForUnknownTypes(t *testing.T) {
	var r access.Registry
	if ok, err := r.CanRead(nil, "plan", "alice", "p1"); ok || err != nil {
		t.Errorf("unregistered type: %v, %v", ok, err)
	}
	r.Register("plan", func(_ *storage.Tx, principal, id string) (bool, error) {
		return principal == "alice" && id == "p1", nil
	})
	if ok, _ := r.CanRead(nil, "plan", "alice", "p1"); !ok {
		t.Error("registered check not consulted")
	}
	if ok, _ := r.CanRead(nil, "plan", "bob", "p1"); ok {
		t.Error("registered check ignored its answer")
	}
}

// Re-granting replaces a grant: it must not let a sharer take away rights
// it could not revoke (a review found bob stripping carol's write).
func TestRegrantCannotStripRightsTheSharerLacks(t *testing.T) {
	a := access.New("alice")
	if err := a.Grant("alice", "bob", []string{"read", "share"}, store, now); err != nil {
		t.Fatal(err)
	}
	if err := a.Grant("alice", "carol", []string{"read", "write", "delete"}, store, now); err != nil {
		t.Fatal(err)
	}
	err := a.Grant("bob", "carol", []string{"read"}, store, now)
	if errs.KindOf(err) != errs.Permission {
		t.Fatalf("bob re-granting carol less: %v, want a PermissionError", err)
	}
	if d, ok := access.DenialOf(err); !ok || d.PrincipalID != "bob" || d.Owner != "alice" {
		t.Errorf("the refusal carries no denial for the trace: %+v", d)
	}
	if !a.Can("carol", "delete") {
		t.Error("carol lost delete")
	}
}

// Every refusal of a share or revoke carries a denial, so that escalation
// attempts are in the trace.
func TestShareRefusalsCarryADenial(t *testing.T) {
	a := access.New("alice")
	if err := a.Grant("alice", "bob", []string{"read", "share"}, store, now); err != nil {
		t.Fatal(err)
	}
	if err := a.Grant("alice", "carol", []string{"read", "write"}, store, now); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"raise its own":       a.Grant("bob", "bob", []string{"read", "write"}, store, now),
		"grant what it lacks": a.Grant("bob", "dave", []string{"write"}, store, now),
		"revoke beyond":       a.Revoke("bob", "carol", store, now),
		"share without share": a.Grant("carol", "dave", []string{"read"}, store, now),
	} {
		if _, ok := access.DenialOf(err); !ok || errs.KindOf(err) != errs.Permission {
			t.Errorf("%s: %v carries no denial", what, err)
		}
	}
}
