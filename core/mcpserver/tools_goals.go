package mcpserver

// addGoalTools registers create_goal, update_goal, active_goals and
// goal_history.
func (s *Server) addGoalTools() {}
