package mcpserver

// addPrompts registers the with_memory prompt.
func (s *Server) addPrompts() {}
