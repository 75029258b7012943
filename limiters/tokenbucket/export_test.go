package tokenbucket

// CurrentConfig returns the config in force, for tests that check when the
// limiter rebuilds it. Its only use is comparing identities.
func CurrentConfig(l *Limiter) any { return l.cfg.Load() }
