package client

import (
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/spi"
)

// wireCodecs is what one connection's handshake settled about compressed
// bodies; immutable once the connection is made.
//
// A codec id on the wire is the 1-based position of a profile in the
// HandshakeAck's Codecs, in both directions. The client sends with the
// first profile of its own list (Options.Compression.Codecs, the order it
// offered) that the ack lists; it decodes a response only with a profile
// it offered that the ack lists at the response's id. The ack's
// CapCompression bit is not consulted: the list decides (a server that
// sets the bit and accepts none of ours gets uncompressed requests).
type wireCodecs struct {
	// send is the codec requests are compressed with, nil for none;
	// sendID its wire id and sendIdx its 0-based position in the
	// client's own list (which identifies it across connections, see
	// call.zidx, without comparing interface values).
	send    spi.Codec
	sendID  uint8
	sendIdx int
	// recv is the codec for each wire id (recv[id-1]), nil where the
	// ack names a profile this client did not offer.
	recv [protocol.MaxCodecs]spi.Codec
	// accepted is the ack's list, for error messages.
	accepted []string
}

// negotiate settles the codecs of a connection whose HandshakeAck
// accepted the profiles accepted (already checked by protocol: at most
// MaxCodecs valid names). A profile the ack names twice is harmless: the
// client sends with its first position and decodes both.
func negotiate(r *codecs.Resolved, accepted []string) wireCodecs {
	w := wireCodecs{sendIdx: -1, accepted: accepted}
	for i, name := range accepted {
		if i >= len(w.recv) {
			break // protocol bounds the list; defensive only
		}
		c, idx, ok := r.Lookup(name)
		if !ok {
			continue
		}
		w.recv[i] = c
		if w.send == nil || idx < w.sendIdx {
			w.send, w.sendID, w.sendIdx = c, uint8(i+1), idx
		}
	}
	return w
}

// recvCodec is the codec for a response's wire id, nil when the id names
// no profile this client offered and the server accepted.
func (w *wireCodecs) recvCodec(id uint8) spi.Codec {
	if id == 0 || int(id) > len(w.recv) {
		return nil
	}
	return w.recv[id-1]
}
