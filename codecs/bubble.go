package codecs

import "time"

// inSynctestBubble reports whether the calling goroutine runs in a
// testing/synctest bubble, whose clock starts at 2000-01-01 00:00 UTC and
// moves only as the bubble's goroutines sleep. A real clock is past 2020.
//
// It exists for the zstd decoders: each holds a channel made when it is
// made, and a channel made in a bubble must not be used outside it (a
// fatal error, not a panic), so a decoder made in a bubble must never go
// back to the shared pool, and a goroutine in a bubble must not take one
// made outside (it would be returned, or leak, from inside). A machine
// whose clock reads before 2020 is taken for a bubble: its zstd decodes
// make a decoder each, which is slower and still correct.
func inSynctestBubble() bool {
	return time.Now().Before(bubbleEpochBound)
}

var bubbleEpochBound = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
