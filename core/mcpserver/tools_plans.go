package mcpserver

// addPlanTools registers create_plan, run_plan and plan_status.
func (s *Server) addPlanTools() {}
