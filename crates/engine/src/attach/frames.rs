//! The client → server stream of attach protocol version 2: frames, so that a resize of the
//! person's terminal can travel beside their keystrokes.
//!
//! A frame is one kind byte, a big-endian `u16` payload length, and the payload:
//! - kind 0, keys: the payload is written to the job's terminal as it is;
//! - kind 1, resize: the payload is the person's terminal size, `cols` then `rows`, each a
//!   big-endian `u16`.
//!
//! Any other kind, or a resize whose payload is not 4 bytes, ends the session.

/// Kind byte of a keys frame.
const KEYS: u8 = 0;
/// Kind byte of a resize frame.
const RESIZE: u8 = 1;
/// Header: kind and length.
const HEADER: usize = 3;

/// One decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Frame {
    /// Keystrokes for the job.
    Keys(Vec<u8>),
    /// The person's terminal is now `cols` × `rows`.
    Resize(u16, u16),
}

/// The frames of `keys` (one per 64 KiB), for a client to send.
pub fn attach_keys_frame(keys: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(keys.len() + HEADER);
    for chunk in keys.chunks(usize::from(u16::MAX)) {
        out.push(KEYS);
        out.extend_from_slice(&u16::try_from(chunk.len()).unwrap_or(u16::MAX).to_be_bytes());
        out.extend_from_slice(chunk);
    }
    out
}

/// The frame that says the person's terminal is now `cols` × `rows`, for a client to send.
pub fn attach_resize_frame(cols: u16, rows: u16) -> Vec<u8> {
    let mut out = vec![RESIZE, 0, 4];
    out.extend_from_slice(&cols.to_be_bytes());
    out.extend_from_slice(&rows.to_be_bytes());
    out
}

/// Cuts a byte stream into frames, whatever way it was split into reads.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    buf: Vec<u8>,
}

impl Decoder {
    /// Adds bytes read from the client.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete frame, `None` until one is complete; an error for a frame no client
    /// may send.
    pub(crate) fn next_frame(&mut self) -> Result<Option<Frame>, String> {
        if self.buf.len() < HEADER {
            return Ok(None);
        }
        let len = usize::from(u16::from_be_bytes([self.buf[1], self.buf[2]]));
        if self.buf.len() < HEADER + len {
            return Ok(None);
        }
        let kind = self.buf[0];
        let payload: Vec<u8> = self.buf.drain(..HEADER + len).skip(HEADER).collect();
        match (kind, payload.as_slice()) {
            (KEYS, _) => Ok(Some(Frame::Keys(payload))),
            (RESIZE, &[c0, c1, r0, r1]) => Ok(Some(Frame::Resize(
                u16::from_be_bytes([c0, c1]),
                u16::from_be_bytes([r0, r1]),
            ))),
            (RESIZE, _) => Err("a resize frame must hold 4 bytes".into()),
            (k, _) => Err(format!("unknown frame kind {k}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_come_out_as_they_went_in_however_the_stream_is_split() {
        let mut stream = attach_keys_frame(b"hello");
        stream.extend(attach_resize_frame(132, 43));
        assert!(attach_keys_frame(b"").is_empty(), "no keys, no frame");
        stream.extend(attach_keys_frame(&[0x1b, b'[', b'A']));
        let want = vec![
            Frame::Keys(b"hello".to_vec()),
            Frame::Resize(132, 43),
            Frame::Keys(b"\x1b[A".to_vec()),
        ];
        for split in 0..=stream.len() {
            let mut d = Decoder::default();
            let mut got = Vec::new();
            for part in [&stream[..split], &stream[split..]] {
                d.push(part);
                while let Some(f) = d.next_frame().expect("valid frames") {
                    got.push(f);
                }
            }
            assert_eq!(got, want, "split at {split}");
        }
    }

    #[test]
    fn long_keys_take_several_frames_and_bad_frames_are_errors() {
        let keys = vec![b'x'; 70_000];
        let mut d = Decoder::default();
        d.push(&attach_keys_frame(&keys));
        let mut total = 0;
        while let Some(Frame::Keys(k)) = d.next_frame().unwrap() {
            total += k.len();
        }
        assert_eq!(total, keys.len());
        d.push(&[9, 0, 0]);
        assert!(d.next_frame().is_err());
        let mut d = Decoder::default();
        d.push(&[RESIZE, 0, 1, 5]);
        assert!(d.next_frame().is_err());
    }
}
