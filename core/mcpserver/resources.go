package mcpserver

// addResources registers the resources (the active goals list, a
// conversation's summary, a thread's context) and the watches that announce
// their changes. Each subsystem's file adds its own.
func (s *Server) addResources() {
	s.addGoalResources()
	s.addConversationResources()
}

// addConversationResources registers the conversation summary and thread
// context resources.
func (s *Server) addConversationResources() {
	s.addSummaryResource()
	s.addThreadContextResource()
}
