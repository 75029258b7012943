package flow

import "testing"

func TestQueueKeepsOrderAcrossReuse(t *testing.T) {
	var q Queue[int]
	next, want := 0, 0
	for round := range 200 {
		for range round % 7 {
			q.Push(next)
			next++
		}
		for range round % 5 {
			if q.Len() == 0 {
				break
			}
			if *q.Front() != want {
				t.Fatalf("front %d, want %d", *q.Front(), want)
			}
			if got := q.Pop(); got != want {
				t.Fatalf("popped %d, want %d", got, want)
			}
			want++
		}
		if q.Len() != next-want {
			t.Fatalf("Len %d, want %d", q.Len(), next-want)
		}
		if q.Len() > 0 && *q.Back() != next-1 {
			t.Fatalf("back %d, want %d", *q.Back(), next-1)
		}
	}
	q.Drain(func(v *int) {
		if *v != want {
			t.Fatalf("drained %d, want %d", *v, want)
		}
		want++
	})
	if q.Len() != 0 || want != next {
		t.Fatalf("after Drain: Len %d, drained up to %d of %d", q.Len(), want, next)
	}
}

func TestQueueDoesNotAllocateInSteadyState(t *testing.T) {
	var q Queue[[2]int]
	for i := range 8 {
		q.Push([2]int{i})
	}
	if n := testing.AllocsPerRun(1000, func() {
		q.Push([2]int{1})
		q.Pop()
	}); n != 0 {
		t.Errorf("%v allocations per Push and Pop with a standing backlog", n)
	}
}
