package mcpserver

import (
	"context"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/clients"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
)

// Disconnect marks the client of the MCP session ss disconnected in the
// owner's registry (clients.disconnect), and forgets the session. A
// session that made no call was never listed: there is nothing to mark.
func (s *Server) Disconnect(ctx context.Context, ss *mcp.ServerSession) error {
	s.mu.Lock()
	id, ok := s.sessions[ss]
	delete(s.sessions, ss)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return s.disconnect(ctx, id)
}

// DisconnectAll marks the client of every MCP session this server has
// seen disconnected, and forgets them: engram mcp calls it when its
// client has gone.
func (s *Server) DisconnectAll(ctx context.Context) error {
	s.mu.Lock()
	ids := make([]string, 0, len(s.sessions))
	for _, id := range s.sessions {
		ids = append(ids, id)
	}
	clear(s.sessions)
	s.mu.Unlock()
	var all []error
	for _, id := range ids {
		all = append(all, s.disconnect(ctx, id))
	}
	return errors.Join(all...)
}

// disconnect runs clients.disconnect for the engram session id, as the
// server's agent. The request names no client: it would count as a call.
// A client the owner no longer lists as connected (it found the process
// gone, or it is a new owner that never saw the client) is no failure.
func (s *Server) disconnect(ctx context.Context, id string) error {
	_, err := conn.CallAs(ctx, s.c, conn.Request{Principal: s.opts.Agent}, clients.ActionDisconnect, clients.DisconnectArgs{Session: id})
	if errs.KindOf(err) == errs.NotFound {
		return nil
	}
	return err
}

// DisconnectWhenEnded makes the server mark each MCP session's client
// disconnected when the session ends (a streamable HTTP client's DELETE,
// an idle timeout, Close). The returned wait blocks until every session
// seen so far has ended and been marked.
func (s *Server) DisconnectWhenEnded() (wait func()) {
	var wg sync.WaitGroup
	s.MCP.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && method == "initialize" {
				wg.Go(func() {
					_ = ss.Wait() // how it ended does not matter: it did
					// Nothing to tell a caller that is gone; a failure
					// leaves the client listed until the owner restarts.
					_ = s.Disconnect(context.WithoutCancel(ctx), ss)
				})
			}
			return next(ctx, method, req)
		}
	})
	return wg.Wait
}
