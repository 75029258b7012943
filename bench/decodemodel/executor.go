package decodemodel

import "sync"

// executor is ModelWorkers' decode pool: a fixed set of persistent workers
// fed by one bounded queue per connection. Workers serve the connections
// that have queued calls round robin, one call per turn, so a connection
// with a deep queue cannot hold every worker while another waits.
//
// Ownership: enqueue transfers the call to the executor; exactly one of
// the worker (run) or stop (drop) then owns it. enqueue blocks while the
// connection's queue is full and returns false, keeping the call, when the
// executor is stopping.
type executor struct {
	mu      sync.Mutex
	work    sync.Cond // signalled when ready gains a queue or stopping is set
	ready   []*callQueue
	stopped bool
	stopCh  chan struct{}
	wg      sync.WaitGroup
}

// callQueue is one connection's queue, owned by the executor's mutex.
type callQueue struct {
	calls []*call
	slots chan struct{} // one token per queued call: the bound
	ready bool          // in the executor's ready ring
}

func newCallQueue(bound int) *callQueue {
	return &callQueue{slots: make(chan struct{}, bound)}
}

// startExecutor starts n workers that call run for each dequeued call.
func startExecutor(n int, run func(*call)) *executor {
	e := &executor{stopCh: make(chan struct{})}
	e.work.L = &e.mu
	e.wg.Add(n)
	for range n {
		go e.worker(run)
	}
	return e
}

func (e *executor) enqueue(q *callQueue, cl *call) bool {
	select {
	case q.slots <- struct{}{}:
	case <-e.stopCh:
		return false
	}
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		<-q.slots
		return false
	}
	q.calls = append(q.calls, cl)
	if !q.ready {
		q.ready = true
		e.ready = append(e.ready, q)
		e.work.Signal()
	}
	e.mu.Unlock()
	return true
}

func (e *executor) worker(run func(*call)) {
	defer e.wg.Done()
	for {
		e.mu.Lock()
		for len(e.ready) == 0 && !e.stopped {
			e.work.Wait()
		}
		if e.stopped {
			e.mu.Unlock()
			return
		}
		q := e.ready[0]
		e.ready[0] = nil
		e.ready = e.ready[1:]
		cl := q.calls[0]
		q.calls[0] = nil
		q.calls = q.calls[1:]
		if len(q.calls) > 0 {
			e.ready = append(e.ready, q) // its next turn is after the others'
		} else {
			q.ready = false
		}
		e.mu.Unlock()
		<-q.slots
		run(cl)
	}
}

// stop stops the workers after the calls they are running and returns the
// calls still queued, which the caller now owns.
func (e *executor) stop() []*call {
	e.mu.Lock()
	e.stopped = true
	close(e.stopCh)
	var left []*call
	for _, q := range e.ready {
		left = append(left, q.calls...)
		q.calls, q.ready = nil, false
	}
	e.ready = nil
	e.work.Broadcast()
	e.mu.Unlock()
	e.wg.Wait()
	return left
}
