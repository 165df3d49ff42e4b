package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/history"
)

// watched is a connection that says when Server.Watch has subscribed to its
// events, so that a test changes things only once the change will be seen.
type watched struct {
	conn.Conn
	once  sync.Once
	ready chan struct{}
}

func (w *watched) SubscribeAs(ctx context.Context, principal string, kinds ...string) <-chan events.Event {
	ch := w.Conn.SubscribeAs(ctx, principal, kinds...)
	w.once.Do(func() { close(w.ready) })
	return ch
}

// watchedClient is a client session whose resources/updated notifications
// arrive on updated, and whose subscriptions are acknowledged on acked.
type watchedClient struct {
	*mcp.ClientSession
	updated <-chan string
	acked   <-chan struct{}
}

// subscribe subscribes to uri and returns once the server has taken the
// subscription: with the current protocol, Subscribe returns as soon as it
// has asked, and the server acknowledges (notifications/subscriptions/
// acknowledged) once a change would be announced.
func (c watchedClient) subscribe(t *testing.T, uri string) {
	t.Helper()
	if err := c.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	select {
	case <-c.acked:
	case <-timeout.C:
		t.Fatalf("the subscription to %s was not acknowledged", uri)
	}
}

// watchedServer serves a server over e that announces resource changes,
// and a client session that hears the announcements.
func watchedServer(t *testing.T, c conn.Conn) watchedClient {
	t.Helper()
	return watchedServerWith(t, c, Options{})
}

// watchedServerWith is watchedServer with the server's options.
func watchedServerWith(t *testing.T, c conn.Conn, opts Options) watchedClient {
	t.Helper()
	w := &watched{Conn: c, ready: make(chan struct{})}
	s := New(w, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Watch(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	<-w.ready
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.MCP.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	updated := make(chan string, 16)
	acked := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1.0"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		}})
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "notifications/subscriptions/acknowledged" {
				acked <- struct{}{}
			}
			return res, err
		}
	})
	cs, err := client.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return watchedClient{ClientSession: cs, updated: updated, acked: acked}
}

// readJSON reads a resource and decodes its JSON content into out.
func readJSON(t *testing.T, cs *mcp.ClientSession, uri string, out any) {
	t.Helper()
	res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("reading %s: %v", uri, err)
	}
	if len(res.Contents) != 1 || res.Contents[0].URI != uri || res.Contents[0].MIMEType != "application/json" {
		t.Fatalf("reading %s: contents %+v; want one JSON content", uri, res.Contents)
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), out); err != nil {
		t.Fatalf("reading %s: %v in %s", uri, err, res.Contents[0].Text)
	}
}

// waitFor returns once uri is announced as updated; other URIs may come
// first. A notification that never comes fails the test after a while.
func waitFor(t *testing.T, updated <-chan string, uri string) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case got := <-updated:
			if got == uri {
				return
			}
		case <-timeout.C:
			t.Fatalf("no resources/updated for %s", uri)
		}
	}
}

func TestTheServerOffersTheConversationResourceTemplates(t *testing.T) {
	cs := connect(t, New(newEngine(t), Options{}))
	var got []string
	for tmpl, err := range cs.ResourceTemplates(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tmpl.URITemplate)
	}
	for _, want := range []string{"engram://conversations/{conversation}/summary", "engram://threads/{thread}/context"} {
		if !strings.Contains(strings.Join(got, " "), want) {
			t.Errorf("resource templates = %v; want %s", got, want)
		}
	}
}

func TestASummarySubscriberHearsWhenItChanges(t *testing.T) {
	e := newEngine(t)
	size := 2
	if _, err := conn.Call(t.Context(), e, history.ActionConfigure, history.ConfigureRequest{Conversation: "party plans", BufferSize: &size}); err != nil {
		t.Fatal(err)
	}
	cs := watchedServer(t, e)
	uri := SummaryURI("party plans")
	if uri != "engram://conversations/party%20plans/summary" {
		t.Fatalf("summary URI = %s", uri)
	}
	var before ConversationSummaryOutput
	readJSON(t, cs.ClientSession, uri, &before)
	if before.Conversation != "party plans" || before.Text != "" {
		t.Fatalf("summary before any eviction = %+v; want it empty", before)
	}
	cs.subscribe(t, uri)
	for _, text := range []string{"Maria's party is on Saturday at the lake house.", "Bring the blue tablecloth.", "Order the cake from Rosa's bakery."} {
		callTool(t, cs.ClientSession, "log_message", map[string]any{"speaker": "user", "text": text, "conversation": "party plans"}, nil)
	}
	waitFor(t, cs.updated, uri)
	var after ConversationSummaryOutput
	readJSON(t, cs.ClientSession, uri, &after)
	if after.Covered != 1 || !strings.Contains(after.Text, "Maria") {
		t.Errorf("summary after an eviction = %+v; want the first message summed up", after)
	}
	// Dropping the conversation takes its summary: subscribers hear of it.
	if _, err := conn.Call(t.Context(), e, history.ActionDrop, history.DropArgs{Conversation: "party plans"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, cs.updated, uri)
	if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri}); err == nil || !strings.Contains(err.Error(), "NotFoundError") {
		t.Errorf("reading a dropped conversation's summary: %v; want a NotFoundError", err)
	}
}

func TestAThreadContextSubscriberHearsOfEachMessage(t *testing.T) {
	e := newEngine(t)
	cs := watchedServer(t, e)
	var q LogMessageOutput
	callTool(t, cs.ClientSession, "log_message", map[string]any{"speaker": "user", "text": "What's the weather in New York?", "channel": "sms"}, &q)
	uri := ThreadContextURI(q.Thread.ThreadID)
	var before ThreadContextOutput
	readJSON(t, cs.ClientSession, uri, &before)
	if before.ThreadID != q.Thread.ThreadID || !strings.Contains(before.CurrentQuestion, "New York") {
		t.Fatalf("thread context = %+v; want the New York question as the current one", before)
	}
	cs.subscribe(t, uri)
	callTool(t, cs.ClientSession, "log_message", map[string]any{"speaker": "assistant", "text": "Sunny, 72°F.", "channel": "sms"}, nil)
	waitFor(t, cs.updated, uri)
	callTool(t, cs.ClientSession, "log_message", map[string]any{"speaker": "user", "text": "And on Thursday?", "channel": "sms"}, nil)
	waitFor(t, cs.updated, uri)
	var after ThreadContextOutput
	readJSON(t, cs.ClientSession, uri, &after)
	if !strings.Contains(after.CurrentQuestion, "Thursday") || len(after.PreviousQuestions) != 1 || !strings.HasPrefix(after.PreviousQuestions[0].Answer, "Sunny") {
		t.Errorf("thread context after the answer and a new question = %+v; want Thursday's, after the answered one", after)
	}
}

func TestReadingAMissingConversationOrThreadFails(t *testing.T) {
	cs := connect(t, New(newEngine(t), Options{}))
	for _, uri := range []string{SummaryURI("nope"), ThreadContextURI("nope")} {
		_, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		if err == nil || !strings.Contains(err.Error(), "NotFoundError") || !strings.Contains(err.Error(), "nope") {
			t.Errorf("reading %s: %v; want a NotFoundError naming nope", uri, err)
		}
	}
}

func TestWithMemoryPromptCarriesTheWorkingMemory(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	callTool(t, cs, "remember", map[string]any{"text": "The user's sister Ana lives in Porto.", "importance": 0.9}, nil)
	callTool(t, cs, "log_message", map[string]any{"speaker": "user", "text": "I'm flying to Portugal in December."}, nil)
	res, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "with_memory", Arguments: map[string]string{"message": "Should I visit Porto?"}})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range res.Messages {
		tc, ok := m.Content.(*mcp.TextContent)
		if !ok {
			t.Fatalf("message %+v is not text", m)
		}
		texts = append(texts, string(m.Role)+": "+tc.Text)
	}
	if len(texts) != 3 || !strings.Contains(texts[0], "Ana lives in Porto") || texts[1] != "user: I'm flying to Portugal in December." || texts[2] != "user: Should I visit Porto?" {
		t.Errorf("with_memory messages = %q; want the working memory, the conversation, the message", texts)
	}
	_, err = cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "with_memory", Arguments: map[string]string{}})
	if err == nil || !strings.Contains(err.Error(), "ValidationError: message:") {
		t.Errorf("with_memory without a message: %v; want an error naming the message", err)
	}
	// A read-only server offers no prompt that records a turn.
	ro := connect(t, New(e, Options{ReadOnly: true}))
	for p, err := range ro.Prompts(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		t.Errorf("the read-only server offers prompt %s", p.Name)
	}
}

// A resource's URI names the call in the Agents view; a conversation's
// name, escaped in the URI, may make it longer than a client call's tool
// may be. Reading it still works.
func TestReadingTheSummaryOfALongNonASCIIConversationWorks(t *testing.T) {
	cs := connect(t, New(newEngine(t), Options{}))
	name := strings.Repeat("é", 90) // 180 bytes: a conversation may have 200
	callTool(t, cs, "log_message", map[string]any{"speaker": "user", "text": "Bonjour.", "conversation": name}, nil)
	uri := SummaryURI(name)
	if len(uri) <= 256 {
		t.Fatalf("the URI is %d bytes; the test wants one longer than a name may be", len(uri))
	}
	var out ConversationSummaryOutput
	readJSON(t, cs, uri, &out)
	if out.Conversation != name {
		t.Errorf("summary of %s = %+v; want the conversation's", uri, out)
	}
}
