package main

import "io"

// runMCPDemo runs `engram mcp demo ...`; ok is false for other commands.
func runMCPDemo(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) < 2 || args[0] != "mcp" || args[1] != "demo" {
		return 0, false
	}
	return exitFailed, true
}
