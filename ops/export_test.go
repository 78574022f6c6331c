package ops

// LentPeak is the high-water mark of the scratch bytes lent out since
// ResetLentPeak.
func LentPeak() int64 { return lent.peak.Load() }

// ResetLentPeak starts a new high-water mark from the bytes lent out now,
// which it returns.
func ResetLentPeak() int64 {
	lent.resetPeak()
	return lent.peak.Load()
}
