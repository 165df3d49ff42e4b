package history

// SetHybridBounds lowers h's hybrid index bounds for a test:
// HybridMaxUtterances, HybridMaxDocs and HybridRebuildMax (0 keeps one).
func SetHybridBounds(h *History, maxUtterances, maxDocs, rebuildMax int) {
	h.hybrid.mu.Lock()
	defer h.hybrid.mu.Unlock()
	if maxUtterances > 0 {
		h.hybrid.maxUtterances = maxUtterances
	}
	if maxDocs > 0 {
		h.hybrid.maxDocs = maxDocs
	}
	if rebuildMax > 0 {
		h.hybrid.rebuildMax = rebuildMax
	}
}

// HybridRebuilds is how many times a write built a hybrid index again
// (retrieval.Index.Add); HybridEvictions, how many indexes were thrown
// away to stay within HybridMaxDocs.
func HybridRebuilds(h *History) int64  { return h.hybrid.rebuilds.Load() }
func HybridEvictions(h *History) int64 { return h.hybrid.evictions.Load() }

// HybridDocs is how many utterances the hybrid indexes hold together.
func HybridDocs(h *History) int {
	h.hybrid.mu.Lock()
	defer h.hybrid.mu.Unlock()
	return h.hybrid.docs
}
