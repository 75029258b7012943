package control

import "time"

// SourceHealth is what a source last said of its own input, apart from
// the documents it handed to Apply: a file that cannot be read, an etcd
// that cannot be reached. The Controller only keeps it, for Status (the
// admin API's /v1/status shows it), so that an operator sees why the
// configuration in force is not the file's.
type SourceHealth struct {
	// Origin is the source's input (a path, endpoints and a key).
	Origin string
	// Err is the last failure, nil once the source reads its input
	// again; At is when the source reported (failure or recovery), and
	// Since when the current state began.
	Err       error
	At, Since time.Time
}

// ReportSource records what src says of its input: err nil when it reads
// it (a recovery, or all is well), the failure otherwise. A failure that
// goes on keeps its Since.
func (c *Controller) ReportSource(src Source, origin string, err error) {
	now := c.o.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.health == nil {
		c.health = map[Source]SourceHealth{}
	}
	prev, had := c.health[src]
	since := now
	if had && (prev.Err == nil) == (err == nil) {
		since = prev.Since
	}
	c.health[src] = SourceHealth{Origin: origin, Err: err, At: now, Since: since}
}
