package mcpserver

// addConversationTools registers log_message, search_history,
// conversation_summary and thread_context.
func (s *Server) addConversationTools() {}
