// Package attach decides, for one engram process and one data directory,
// whether this process owns the directory or attaches to the engram that
// does, and keeps that true while it runs.
//
// The first engram to open a durable data directory owns it: it holds the
// store's lock, runs the engine, and serves it on the Unix socket
// DATA/engram.sock (core/server). Every later engram on the same directory
// finds the socket and runs as a client (core/remote) through the same
// conn.Conn. When the owner goes away, the next client to notice opens the
// directory itself (the lock is free once the owner's process is gone) or
// attaches to whichever client got there first.
//
// The lock is the truth, the socket only a way to reach its holder: a
// socket file whose listener is gone (an owner killed with kill -9) is
// never trusted, and the next owner replaces it.
package attach

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/remote"
	"github.com/engram-console/engram/core/server"
	"github.com/engram-console/engram/core/wire"
	"github.com/engram-console/engram/storage"
)

// TakeoverWithin is how long a client looks for the next owner, or tries
// to become it, after the owner went away.
const TakeoverWithin = 2 * time.Second

// maxSocketPath is the longest socket path Linux accepts (sun_path holds
// 108 bytes with the terminating NUL).
const maxSocketPath = 107

// Mode says what a process may be.
type Mode int

const (
	// Either: attach to the owner if there is one, else own the directory.
	Either Mode = iota
	// OwnerOnly: own the directory or fail (engram serve).
	OwnerOnly
)

// Options say how to open a data directory.
type Options struct {
	// DataDir is the durable data directory.
	DataDir string
	// Agent is this process's default principal.
	Agent string
	// Mode: Either (the console, --batch) or OwnerOnly (engram serve).
	Mode Mode
	// Open opens the engine when this process becomes the owner.
	Open func() (*core.Engine, error)
	// Tokens checks bearer tokens on TCP (nil: TCP refuses everything).
	Tokens func(*core.Engine) server.Authenticator
	// MCP, when set, makes the MCP service the owner serves at /mcp on
	// TCP (engram serve --listen); nil: none.
	MCP func(*core.Engine) server.MCP
	// Listen, when set, is a TCP address the owner also serves
	// (engram serve --listen HOST:PORT).
	Listen string
	// Logger gets what the server logs (nil: discarded).
	Logger *slog.Logger
}

// Conn is a connection to the engine of a data directory: in this process
// (the owner) or in another (a client). It moves to the next owner when
// the current one goes away. Safe for concurrent use.
type Conn struct {
	opts Options

	mu   sync.Mutex
	gen  int // bumped on every change of owner
	cur  conn.Conn
	own  *owned        // set while this process owns the directory
	rem  *remote.Conn  // set while it is a client
	lost chan struct{} // closed when the current connection is found dead
	// moving is closed once a move to the next owner has finished (nil
	// when none is under way).
	moving chan struct{}
	// change is the last change of owner, for subscribers; changeGen is
	// the generation it made (later moves that found the same owner bump
	// gen, not changeGen).
	change    *conn.OwnerChange
	changeGen int
	// replacedGen is the last generation whose owner was found replaced
	// by another on the same socket path (firstReplaced).
	replacedGen int
	closed      bool
}

// owned is what an owner runs: the engine and its servers.
type owned struct {
	engine *core.Engine
	srv    *server.Server
	socket string
	unix   net.Listener
	tcp    net.Listener
}

// Open attaches to the data directory's owner or becomes it.
func Open(ctx context.Context, opts Options) (*Conn, error) {
	c := &Conn{opts: opts}
	if err := c.connect(ctx, 0); err != nil {
		return nil, err
	}
	return c, nil
}

// SocketPath is the owner's socket of a data directory.
func SocketPath(dataDir string) string { return filepath.Join(dataDir, wire.SocketName) }

// connect finds the owner or becomes it. prevPID is the owner that went
// away (0 at the start).
func (c *Conn) connect(ctx context.Context, prevPID int) error {
	socket := SocketPath(c.opts.DataDir)
	deadline := time.Now().Add(TakeoverWithin)
	if prevPID == 0 {
		// At the start, an owner may be busy opening a large store.
		deadline = time.Now().Add(5 * time.Second)
	}
	var lastErr error
	for delay := 5 * time.Millisecond; ; delay = min(delay*2, 100*time.Millisecond) {
		if c.opts.Mode == Either {
			if rem, err := c.dial(ctx, socket); err == nil {
				c.use(nil, rem)
				return nil
			}
		}
		engine, err := c.opts.Open()
		if err == nil {
			own, err := c.serve(engine, socket)
			if err != nil {
				return errors.Join(err, engine.Close())
			}
			c.use(own, nil)
			return nil
		}
		if !errors.Is(err, storage.ErrLocked) {
			return err
		}
		lastErr = err
		if c.opts.Mode == OwnerOnly {
			return fmt.Errorf("%w (engram serve owns a data directory only when no other engram does)", err)
		}
		// Another engram holds the lock and has not served the socket yet
		// (it is opening the store, or replacing a dead owner's socket).
		if len(socket) > maxSocketPath {
			return fmt.Errorf("%w; it cannot share it: the path %s is too long for a Unix socket (%d bytes, at most %d); use a shorter --data path",
				err, socket, len(socket), maxSocketPath)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w; it does not answer on %s (an engram older than this one, or one that is stuck)", lastErr, socket)
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// dial attaches to the socket's server if it is the lock holder's.
func (c *Conn) dial(ctx context.Context, socket string) (*remote.Conn, error) {
	if _, err := os.Stat(socket); err != nil {
		return nil, err
	}
	rem, err := remote.Dial(ctx, remote.Options{Socket: socket, Agent: c.opts.Agent})
	if err != nil {
		return nil, err
	}
	// The lock file names its holder; a server that is not the holder is
	// not trusted (it cannot be, short of a process that is not engram).
	if holder := lockHolder(c.opts.DataDir); holder != 0 && holder != rem.OwnerPID() {
		_ = rem.Close()
		return nil, fmt.Errorf("the socket's server (pid %d) does not hold the directory's lock (pid %d)", rem.OwnerPID(), holder)
	}
	return rem, nil
}

// lockHolder is the pid written in the data directory's lock file, or 0.
func lockHolder(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, storage.LockFileName))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// serve makes this process the owner: it serves engine on the socket
// (replacing a dead owner's) and, when asked, on TCP.
func (c *Conn) serve(engine *core.Engine, socket string) (*owned, error) {
	var auth server.Authenticator
	if c.opts.Tokens != nil {
		auth = c.opts.Tokens(engine)
	}
	var mcp server.MCP
	if c.opts.MCP != nil && c.opts.Listen != "" {
		mcp = c.opts.MCP(engine)
	}
	own := &owned{engine: engine, socket: socket,
		srv: server.New(engine, server.Options{Tokens: auth, MCP: mcp, Logger: c.opts.Logger})}
	if len(socket) > maxSocketPath {
		// The engine works; other engrams cannot attach. Say why in the
		// log rather than refuse to run.
		if c.opts.Logger != nil {
			c.opts.Logger.Warn("not serving the data directory: its socket path is too long for a Unix socket; other engrams cannot attach", "socket", socket, "bytes", len(socket), "limit", maxSocketPath)
		}
	} else {
		// We hold the lock, so whatever socket file is there is a dead
		// owner's: never trusted, replaced.
		if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("removing the dead owner's socket %s: %w", socket, err)
		}
		l, err := listenUnix(socket)
		if err != nil {
			return nil, err
		}
		own.unix = l
		go func() { _ = own.srv.ServeUnix(l) }() // ends with Shutdown
	}
	if c.opts.Listen != "" {
		l, err := net.Listen("tcp", c.opts.Listen)
		if err != nil {
			own.shutdown()
			return nil, fmt.Errorf("--listen %s: %w", c.opts.Listen, err)
		}
		own.tcp = l
		go func() { _ = own.srv.ServeTCP(l) }()
	}
	return own, nil
}

// listenUnix listens on a socket only its owner may use (mode 0600): the
// socket trusts whoever can connect to act as any agent. It binds in a
// private directory, sets the mode, and only then renames the socket into
// place, so that nobody can connect while the mode is still the umask's.
func listenUnix(path string) (net.Listener, error) {
	fail := func(err error) (net.Listener, error) {
		return nil, fmt.Errorf("serving the data directory on %s: %w", path, err)
	}
	private, err := os.MkdirTemp(filepath.Dir(path), ".sock-")
	if err != nil {
		return fail(err)
	}
	defer func() { _ = os.RemoveAll(private) }() // empty once the socket moved
	tmp := filepath.Join(private, "s")
	if len(tmp) > maxSocketPath {
		// The private name is a few bytes longer than the final one:
		// bind in place, and set the mode at once.
		tmp = path
	}
	l, err := net.Listen("unix", tmp)
	if err != nil {
		return fail(err)
	}
	// The socket file is removed by its owner (owned.shutdown), under the
	// name it has then, not the name it was bound with.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		_ = l.Close()
		return fail(err)
	}
	if tmp == path {
		return l, nil
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = l.Close()
		return fail(err)
	}
	return l, nil
}

// shutdown stops serving; the engine stays open.
func (o *owned) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = o.srv.Shutdown(ctx) // requests in flight finish or are cut off
	if o.unix != nil {
		_ = os.Remove(o.socket)
	}
}

// use makes own or rem the current connection.
func (c *Conn) use(own *owned, rem *remote.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.own, c.rem = own, rem
	if own != nil {
		c.cur = own.engine
	} else {
		c.cur = rem
	}
	c.gen++
	c.lost = make(chan struct{})
}

// current is the connection now, and its generation.
func (c *Conn) current(ctx context.Context) (conn.Conn, int, error) {
	for {
		c.mu.Lock()
		cur, gen, moving, closed := c.cur, c.gen, c.moving, c.closed
		c.mu.Unlock()
		if closed {
			return nil, 0, errs.New(errs.Internal, "the connection to the data directory is closed")
		}
		if moving == nil {
			return cur, gen, nil
		}
		select {
		case <-moving:
		case <-ctx.Done():
			return nil, 0, errs.New(errs.Unavailable, "waiting for the next owner of the data directory: %v", ctx.Err())
		}
	}
}

// moveOn moves to the next owner after the connection of generation gen
// was found dead; a caller whose generation is already old only waits
// for the move under way. Subscribers learn of the move from
// changeSince.
func (c *Conn) moveOn(gen int) error {
	c.mu.Lock()
	if c.closed || gen != c.gen {
		c.mu.Unlock()
		return nil
	}
	if c.moving != nil {
		moving := c.moving
		c.mu.Unlock()
		<-moving
		return nil
	}
	moving := make(chan struct{})
	c.moving = moving
	prev := c.rem
	close(c.lost)
	c.mu.Unlock()

	prevPID := 0
	if prev != nil {
		prevPID = prev.OwnerPID()
		_ = prev.Close()
	}
	err := c.connect(context.Background(), prevPID)
	w := c.Where()
	msg := fmt.Sprintf("the owner (pid %d) went away; attached to pid %d now", prevPID, w.PID)
	if w.Owner {
		msg = fmt.Sprintf("the owner (pid %d) went away; this engram owns the data directory now", prevPID)
	}
	c.mu.Lock()
	c.moving = nil
	if err == nil && (w.Owner || w.PID != prevPID) {
		c.change = &conn.OwnerChange{Where: w, PreviousPID: prevPID, Message: msg}
		c.changeGen = c.gen
	} else {
		// The move failed: the dead connection stays current, and the
		// next request to find it dead moves again (closing a new lost).
		c.lost = make(chan struct{})
	}
	c.mu.Unlock()
	close(moving)
	return err
}

// Do runs a request on the current owner. A request that never reached
// the owner goes to the next one. So does one in flight when the owner
// went away, if that is safe: a read, or a write whose effect is one
// commit, sent with an idempotency key — Do gives every such write a key
// of its own, so the next owner runs it only if the one that died had not
// committed it. Otherwise (no next owner in time, a plan run or chat turn
// that may have done part of its work, an action whose result holds a
// secret) the request fails with Unavailable: it may or may not have
// committed.
func (c *Conn) Do(ctx context.Context, req conn.Request) (json.RawMessage, error) {
	for tries := 0; ; tries++ {
		cur, gen, err := c.current(ctx)
		if err != nil {
			return nil, err
		}
		read, keyed := false, false
		if rem, ok := cur.(*remote.Conn); ok {
			read, keyed = rem.Retry(req.Action)
			if keyed && req.IdempotencyKey == "" {
				req.IdempotencyKey = "attach-" + rand.Text()
				// A key is its principal's: name it, so that the next
				// owner (whose default agent may differ) files it alike.
				if req.Principal == "" {
					req.Principal = rem.Agent()
				}
			}
		}
		out, err := cur.Do(ctx, req)
		if rem, ok := cur.(*remote.Conn); ok && rem.Replaced() && c.firstReplaced(gen) {
			// Another owner answered: the dialed one is gone. Move to
			// the new one now, so that subscribers hear of the change
			// (and the console's header follows) without waiting for
			// their stream to notice.
			c.noticeGone(gen)
		}
		if errs.KindOf(err) != errs.Unavailable || ctx.Err() != nil {
			return out, err
		}
		safe := remote.DidNotRun(err) || read || keyed
		if !safe || tries == 3 {
			if !remote.Busy(err) {
				c.noticeGone(gen)
			}
			return out, err
		}
		if remote.Busy(err) {
			// The owner is alive: ask it again in a moment.
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return nil, err
			}
			continue
		}
		// Move to the next owner and send it there.
		if merr := c.moveOn(gen); merr != nil {
			return nil, err
		}
	}
}

// firstReplaced reports whether this is the first answer of generation gen
// found to come from another owner than the dialed one: one move per
// connection, even if it fails (a server that does not hold the lock).
func (c *Conn) firstReplaced(gen int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.replacedGen == gen {
		return false
	}
	c.replacedGen = gen
	return true
}

// noticeGone starts the move to the next owner (once per dead owner).
func (c *Conn) noticeGone(gen int) {
	go func() { _ = c.moveOn(gen) }()
}

// changeSince is the last change of owner, if there was one after
// generation gen: a move that found the same owner again is none.
func (c *Conn) changeSince(gen int) (conn.OwnerChange, int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.change == nil || c.changeGen <= gen {
		return conn.OwnerChange{}, c.gen, false
	}
	return *c.change, c.gen, true
}

// Subscribe is SubscribeAs for the connection's agent.
func (c *Conn) Subscribe(ctx context.Context, kinds ...string) <-chan events.Event {
	return c.SubscribeAs(ctx, c.Agent(), kinds...)
}

// SubscribeAs returns the events principal may see until ctx ends; when
// the owner goes away the stream moves to the next one, with an
// EventOwnerChanged between.
func (c *Conn) SubscribeAs(ctx context.Context, principal string, kinds ...string) <-chan events.Event {
	out := make(chan events.Event, 1024)
	c.mu.Lock()
	reported := c.gen
	c.mu.Unlock()
	send := func(ev events.Event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	// The first stream starts before Subscribe returns, so that what the
	// caller does next is seen (a remote stream waits for the owner).
	cur, gen, err := c.current(ctx)
	var in <-chan events.Event
	since := time.Now() // when the stream in started
	if err == nil {
		in = cur.SubscribeAs(ctx, principal, kinds...)
	}
	go func() {
		defer close(out)
		for ctx.Err() == nil {
			if in == nil {
				// current waits for a move under way (another caller's):
				// ask for the change after it, so that none goes untold.
				if cur, gen, err = c.current(ctx); err != nil {
					return
				}
				if change, now, ok := c.changeSince(reported); ok {
					reported = now
					if !send(events.Event{Name: conn.EventOwnerChanged.Name(), At: time.Now().UTC(), Data: change, Audience: events.Everyone()}) {
						return
					}
				}
				in, since = cur.SubscribeAs(ctx, principal, kinds...), time.Now()
			}
			for ev := range in {
				if !send(ev) {
					return
				}
			}
			if ctx.Err() != nil {
				return
			}
			// The stream ended with ctx alive: the owner is gone.
			in = nil
			err := c.moveOn(gen)
			_, _, changed := c.changeSince(gen)
			wait := err != nil // no owner was found this time
			if err == nil && !changed {
				// The same owner was found again (the stream ended
				// without its going away): what it sent meanwhile is
				// unknown here, as after a gap. If it ended the stream
				// at once, it refuses it: ask again in a moment, not
				// over and over.
				if !send(events.Event{Name: wire.EventGap, At: time.Now().UTC(), Audience: events.Everyone()}) {
					return
				}
				wait = time.Since(since) < TakeoverWithin/4
			}
			if wait {
				// Look again in a moment, rather than end the stream for
				// good while requests may still find an owner.
				select {
				case <-time.After(TakeoverWithin / 4):
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// Info is engine.info of the current owner.
func (c *Conn) Info(ctx context.Context) (conn.Info, error) {
	cur, gen, err := c.current(ctx)
	if err != nil {
		return conn.Info{}, err
	}
	info, err := cur.Info(ctx)
	if errs.KindOf(err) == errs.Unavailable && ctx.Err() == nil {
		c.noticeGone(gen)
	}
	return info, err
}

// InfoWith is engine.info of the current owner with args (conn.InfoAsker):
// the console's first frame asks without the counts.
func (c *Conn) InfoWith(ctx context.Context, args conn.InfoArgs) (conn.Info, error) {
	cur, gen, err := c.current(ctx)
	if err != nil {
		return conn.Info{}, err
	}
	var info conn.Info
	if a, ok := cur.(conn.InfoAsker); ok {
		info, err = a.InfoWith(ctx, args)
	} else {
		info, err = cur.Info(ctx)
	}
	if errs.KindOf(err) == errs.Unavailable && ctx.Err() == nil {
		c.noticeGone(gen)
	}
	return info, err
}

// CheckAction asks the current owner's list of actions.
func (c *Conn) CheckAction(name string) error {
	cur, _, err := c.current(context.Background())
	if err != nil {
		return err
	}
	return cur.CheckAction(name)
}

// Agent is this process's default principal.
func (c *Conn) Agent() string {
	if c.opts.Agent != "" {
		return c.opts.Agent
	}
	cur, _, err := c.current(context.Background())
	if err != nil {
		return ""
	}
	return cur.Agent()
}

// Now is the owner's engine clock.
func (c *Conn) Now() time.Time {
	cur, _, err := c.current(context.Background())
	if err != nil {
		return time.Now().UTC()
	}
	return cur.Now()
}

// Where says whether this process owns the directory, or which does.
func (c *Conn) Where() conn.Where {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.own != nil {
		return conn.Where{Owner: true, PID: os.Getpid()}
	}
	if c.rem != nil {
		// The owner that answered last: a new owner on the same socket
		// path answers before this client has moved to it.
		return conn.Where{PID: c.rem.AnsweredBy()}
	}
	return conn.Where{}
}

// TCPAddr is the TCP address this process serves (Options.Listen, with
// the port chosen when it was 0), or "" when it serves none.
func (c *Conn) TCPAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.own == nil || c.own.tcp == nil {
		return ""
	}
	return c.own.tcp.Addr().String()
}

// Engine is this process's engine while it owns the directory, else nil.
func (c *Conn) Engine() *core.Engine {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.own == nil {
		return nil
	}
	return c.own.engine
}

// Lost is closed when the current connection is found dead (for tests and
// faces that wait for a move).
func (c *Conn) Lost() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

// Close stops serving (an owner: clients move to the next owner), closes
// the engine or the connection. Safe to call more than once.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	moving := c.moving
	c.mu.Unlock()
	if moving != nil {
		<-moving
	}
	c.mu.Lock()
	own, rem := c.own, c.rem
	c.mu.Unlock()
	if own != nil {
		own.shutdown()
		return own.engine.Close()
	}
	if rem != nil {
		return rem.Close()
	}
	return nil
}

var (
	_ conn.Conn    = (*Conn)(nil)
	_ conn.Locator = (*Conn)(nil)
)
