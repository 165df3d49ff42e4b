package conn_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
)

// fakeConn answers every request with result and records what it was asked.
type fakeConn struct {
	result string
	asked  []conn.Request
}

func (f *fakeConn) Do(_ context.Context, req conn.Request) (json.RawMessage, error) {
	f.asked = append(f.asked, req)
	return json.RawMessage(f.result), nil
}
func (f *fakeConn) Subscribe(context.Context, ...string) <-chan events.Event { return nil }

func (f *fakeConn) SubscribeAs(context.Context, string, ...string) <-chan events.Event {
	return nil
}
func (f *fakeConn) Info(context.Context) (conn.Info, error) { return conn.Info{}, nil }
func (f *fakeConn) CheckAction(string) error                { return nil }
func (f *fakeConn) Agent() string                           { return "local" }
func (f *fakeConn) Now() time.Time                          { return time.Time{} }

type greetArgs struct {
	Name string `json:"name"`
}

type greeting struct {
	Text  string `json:"text"`
	Count int    `json:"count"`
}

var actionGreet = action.NewRef[greetArgs, greeting]("test.greet")

func TestCallEncodesArgsAndDecodesTheResult(t *testing.T) {
	c := &fakeConn{result: `{"text":"hello, Ada","count":2}`}
	got, err := conn.Call(context.Background(), c, actionGreet, greetArgs{Name: "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	if got != (greeting{Text: "hello, Ada", Count: 2}) {
		t.Errorf("result %+v", got)
	}
	if len(c.asked) != 1 || c.asked[0].Action != "test.greet" || string(c.asked[0].Args) != `{"name":"Ada"}` {
		t.Errorf("asked %+v", c.asked)
	}
}

func TestCallAsSendsThePrincipalAndTurn(t *testing.T) {
	c := &fakeConn{result: `{}`}
	if _, err := conn.CallAs(context.Background(), c, conn.Request{Action: "ignored", Principal: "bob", Turn: "t1"}, actionGreet, greetArgs{}); err != nil {
		t.Fatal(err)
	}
	if r := c.asked[0]; r.Action != "test.greet" || r.Principal != "bob" || r.Turn != "t1" {
		t.Errorf("asked %+v: want test.greet as bob in t1", r)
	}
}

func TestCallNamesTheActionAndTypeWhenTheResultDoesNotDecode(t *testing.T) {
	c := &fakeConn{result: `{"text": 42}`}
	_, err := conn.Call(context.Background(), c, actionGreet, greetArgs{})
	e := errs.As(err)
	if err == nil || e.Kind != errs.Internal || !strings.Contains(e.Message, "test.greet") || !strings.Contains(e.Message, "conn_test.greeting") {
		t.Fatalf("error %v: want an Internal error naming test.greet and the result type", err)
	}
}
