package endpointpolicy

// windowBuckets is the number of time buckets in every sliding window.
const windowBuckets = 10

// bucket holds two counts: successes and failures for the breaker,
// requests and accepts for the throttle.
type bucket struct{ a, b uint64 }

// window is a sliding window of windowBuckets time buckets of a given
// width. Times are nanoseconds since the owning policy's base instant.
// The width is passed to every advance, so it may change (a live update):
// the history stays and expires at the new pace. A time earlier than the
// current bucket (readings taken concurrently, before the owner's lock)
// counts in the current bucket. It is not safe for concurrent use.
type window struct {
	buckets   [windowBuckets]bucket
	sum       bucket // totals over buckets
	head      int    // index of the current bucket
	epoch     uint64 // rotations so far: the current bucket's number
	headStart int64  // start of the current bucket
	started   bool
}

// advance rotates the window so that now falls in the current bucket,
// forgetting the buckets that slid out.
func (w *window) advance(now, width int64) {
	if !w.started {
		w.started, w.headStart = true, now
		return
	}
	if width < 1 {
		width = 1
	}
	d := now - w.headStart
	if d < width {
		return
	}
	steps := d / width
	if steps >= windowBuckets {
		w.buckets = [windowBuckets]bucket{}
		w.sum = bucket{}
	} else {
		for range steps {
			w.head = (w.head + 1) % windowBuckets
			w.sum.a -= w.buckets[w.head].a
			w.sum.b -= w.buckets[w.head].b
			w.buckets[w.head] = bucket{}
		}
	}
	w.epoch += uint64(steps)
	w.headStart += steps * width
}

// add counts a and b in the current bucket.
func (w *window) add(a, b uint64) {
	w.buckets[w.head].a += a
	w.buckets[w.head].b += b
	w.sum.a += a
	w.sum.b += b
}

// reset forgets every count and starts a fresh current bucket at now.
func (w *window) reset(now int64) {
	epoch := w.epoch + windowBuckets // older epochs leave the window
	*w = window{epoch: epoch, headStart: now, started: true}
}

// withdrawA takes back one a counted in the bucket numbered epoch, if that
// bucket is still in the window and holds one.
func (w *window) withdrawA(epoch uint64) {
	if epoch > w.epoch || w.epoch-epoch >= windowBuckets {
		return
	}
	i := (w.head - int(w.epoch-epoch) + windowBuckets) % windowBuckets
	if w.buckets[i].a > 0 {
		w.buckets[i].a--
		w.sum.a--
	}
}
