package flow

// Queue is a receiver's FIFO of the messages its window admitted and its
// consumer has not taken: a slice reused in place, so that a stream whose
// consumer keeps up, or one whose backlog stays within what the queue
// once held, allocates nothing per message. The window bounds its
// length. The zero value is empty; not safe for concurrent use (a
// stream guards it with its mutex).
type Queue[T any] struct {
	q    []T
	head int
}

// Len is the number of queued messages.
func (q *Queue[T]) Len() int { return len(q.q) - q.head }

// Push appends m, reusing the room of the messages already taken.
func (q *Queue[T]) Push(m T) {
	if q.head > 0 && len(q.q) == cap(q.q) {
		n := copy(q.q, q.q[q.head:])
		clear(q.q[n:])
		q.q, q.head = q.q[:n], 0
	}
	q.q = append(q.q, m)
}

// Front is the oldest message; the queue must not be empty.
func (q *Queue[T]) Front() *T { return &q.q[q.head] }

// Back is the newest message; the queue must not be empty.
func (q *Queue[T]) Back() *T { return &q.q[len(q.q)-1] }

// Pop removes and returns the oldest message; the queue must not be empty.
func (q *Queue[T]) Pop() T {
	var zero T
	m := q.q[q.head]
	q.q[q.head] = zero
	q.head++
	if q.head == len(q.q) {
		q.q, q.head = q.q[:0], 0
	}
	return m
}

// Drain removes every message, oldest first, handing each to f.
func (q *Queue[T]) Drain(f func(*T)) {
	var zero T
	for i := q.head; i < len(q.q); i++ {
		f(&q.q[i])
		q.q[i] = zero
	}
	q.q, q.head = q.q[:0], 0
}
