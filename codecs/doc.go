// Package codecs holds sluice's built-in compression codecs, each an
// spi.Codec: Identity, Zstd, S2, Gzip and Brotli (wire profiles "identity",
// "zstd", "s2", "gzip", "br"). Builtin lists the compressing ones in the
// order a client offers them; ByName finds one by profile name; Bomb builds
// a decompression bomb in any of their formats for tests.
//
// Every codec is safe for concurrent use and keeps the contract of
// spi.Codec:
//
//   - Compress writes into dst's spare capacity only and reports "would not
//     fit" (dst unchanged) instead of growing it. Encoders are pooled (gzip
//     writers and brotli writers Reset per call, brotli's per window size);
//     zstd uses one shared EncodeAll encoder; zstd and s2 encode straight
//     into dst when their worst case fits, otherwise into a pooled scratch
//     buffer that is copied when the result fits.
//   - Decompress decodes exactly one complete body. Truncated or corrupt
//     input, and any byte after the body, fail with an error wrapping
//     spi.ErrCorrupt; output that would pass the limit fails with
//     spi.ErrDecodedTooLarge as soon as it would (one byte past the limit is
//     probed, never decoded into the output); the context is checked before
//     decoding and after every spi.DecodeQuantum bytes of output. On error
//     dst[:len(dst)] is returned.
//
// Output memory: decoded bytes go into dst's spare capacity (first grown to
// the size the body declares, when it declares one within the limit), then
// into pooled quanta of spi.DecodeQuantum bytes, joined at the end into one
// allocation of exactly the decoded size. A body refused at its limit thus
// holds at most the limit in pooled quanta and allocates nothing else once
// the pools are warm.
//
// Per codec:
//
//   - identity: the body is the message. Longer than the limit is refused
//     before copying; nothing is ever corrupt. Not in Builtin: the
//     compression policy sends small or incompressible bodies uncompressed
//     without a profile.
//   - zstd (RFC 8878, github.com/klauspost/compress/zstd): exactly one frame,
//     no skippable frames, no dictionaries; the block headers are walked
//     before decoding, so truncation and trailing bytes are found without
//     decoding. A declared content size above the limit, or a window above
//     twice the limit, is refused at once (the decoder would need that
//     memory). Decoders are pooled, synchronous (WithDecoderConcurrency(1),
//     window and memory capped from the limit) and read in quanta into the
//     output; never a
//     streaming decoder into an unbounded buffer. A decoder holds a ring of
//     the frame's window plus two blocks, kept while pooled.
//   - s2 (github.com/klauspost/compress/s2): one S2 stream in the framed
//     format (what s2.Writer writes and any s2.Reader reads) in a canonical
//     chunking: the stream identifier, then data chunks (each with its
//     CRC-32C) of exactly spi.DecodeQuantum decoded bytes but the last,
//     which holds fewer and ends the body. So a stream cut at a chunk
//     boundary, trailing bytes and chunk types sluice never writes are
//     corrupt. Decompress walks the chunks without an s2.Reader: each
//     chunk's declared length is checked against the quantum and the
//     limit before it decodes straight into the output, and the context
//     is checked between chunks. No total length is declared, so nothing
//     is allocated from one.
//   - gzip (RFC 1952, github.com/klauspost/compress/gzip): exactly one
//     member (multistream off); any byte after its trailer is corrupt.
//     Readers are pooled and Reset; they read the body in place (no
//     read-ahead buffer). The trailer's size is a capacity hint only.
//   - br (RFC 7932, github.com/andybalholm/brotli): exactly one stream; any
//     byte after it is corrupt. The large-window extension is refused, so a
//     reader's ring buffer is at most the stream's window (16 MiB at most;
//     4 MiB for the common lgwin 22); Compress picks the smallest window
//     that covers the message. Readers are pooled and Reset and keep their
//     ring buffer while pooled. Brotli has no checksum: a corrupted body may
//     decode to other bytes without an error.
//
// The decoded-size limit itself is the caller's: spi.DecodeLimit combines
// the absolute cap with the expansion-ratio guard.
package codecs
