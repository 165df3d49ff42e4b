package mcpserver

// addWorkingMemoryTool registers working_memory.
func (s *Server) addWorkingMemoryTool() {}
