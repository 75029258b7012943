package endpointpolicy

// A token packs, from the high bits: the endpoint's id (endpointBits, never
// 0, so a valid token is never 0), the index of its slot in the endpoint's
// ticket table (slotBits) and the endpoint's issue sequence number
// (seqBits).
const (
	seqBits      = 20
	slotBits     = 20
	endpointBits = 64 - seqBits - slotBits

	seqMask      = 1<<seqBits - 1
	slotMask     = 1<<slotBits - 1
	maxEndpoints = 1<<endpointBits - 1 // ids 1..maxEndpoints
	maxSlots     = 1 << slotBits
)

func makeToken(endpoint, slot, seq uint32) uint64 {
	return uint64(endpoint)<<(slotBits+seqBits) | uint64(slot&slotMask)<<seqBits | uint64(seq&seqMask)
}

func tokenEndpoint(token uint64) uint32 { return uint32(token >> (slotBits + seqBits)) }

func tokenSlot(token uint64) uint32 { return uint32(token>>seqBits) & slotMask }

// ticket is one outstanding attempt: the exact token issued for it and
// what the policy wants back when it reports (a state generation, a
// window epoch).
type ticket struct {
	token uint64
	info  uint64
}

// ticketTable tracks one endpoint's outstanding attempts: at most maxSlots
// at once, each redeemable exactly once. Slots are reused through a free
// list, so after warm-up issue and redeem do not allocate. It is not safe
// for concurrent use: the endpoint's mutex guards it.
type ticketTable struct {
	slots []ticket
	free  []uint32
	seq   uint32
}

// issue records a new outstanding attempt carrying info and returns its
// token, or false if maxSlots attempts are already outstanding.
func (t *ticketTable) issue(endpoint uint32, info uint64) (uint64, bool) {
	var i uint32
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		if len(t.slots) >= maxSlots {
			return 0, false
		}
		i = uint32(len(t.slots))
		t.slots = append(t.slots, ticket{})
	}
	t.seq++
	tok := makeToken(endpoint, i, t.seq)
	t.slots[i] = ticket{token: tok, info: info}
	return tok, true
}

// redeem ends the outstanding attempt token names and returns its info, or
// false if token is not outstanding (unknown, or already redeemed).
func (t *ticketTable) redeem(token uint64) (uint64, bool) {
	i := tokenSlot(token)
	if token == 0 || int(i) >= len(t.slots) || t.slots[i].token != token {
		return 0, false
	}
	info := t.slots[i].info
	t.slots[i] = ticket{}
	t.free = append(t.free, i)
	return info, true
}

// outstanding returns the number of attempts issued and not yet redeemed.
func (t *ticketTable) outstanding() int { return len(t.slots) - len(t.free) }
