// Package server is the owner side of engram's wire protocol
// (core/wire, docs/protocol.md): the engram process that owns a data
// directory serves its engine over HTTP/1.1 to other processes, on the
// directory's Unix socket (which trusts the local user and takes the agent
// from each request) and, when asked, over TCP (where every request needs a
// bearer token, and acts as the token's agent).
//
// Three endpoints: POST /v1/do runs one action and answers with the batch
// result object; GET /v1/info describes the owner; GET /v1/events streams
// the engine's events as Server-Sent Events, resumable after a reconnect.
// On TCP only, /mcp hands MCP's streamable HTTP requests to Options.MCP,
// as the token's agent.
// A request the owner refuses before running anything (bad JSON, too big,
// no token, too busy...) gets a non-200 status and a wire.Failure body; an
// action that runs and fails is a 200 with ok:false, as in a batch script.
//
// The server protects the owner from its clients: bodies, concurrent
// requests and event streams are bounded, a client that sends its headers
// too slowly is cut off, and a stream whose reader falls behind is dropped
// rather than allowed to hold up the engine or other streams.
package server
