//! Fuzzing the HTTP/2 client's frame reader: what a server sends (its SETTINGS,
//! heads whole and cut into CONTINUATIONs, padded and with priority, bodies, PINGs, resets,
//! GOAWAYs, pushes, floods of each) mutated by `crate::fuzz` and read as a connection reads it:
//! into a buffer of four frames, the frames taken by [`Reader`], each head's block
//! decoded by [`h2frame::response_head`].
//!
//! Properties: no panic or hang; every frame taken is whole, within the buffer and at most
//! [`h2frame::MAX_FRAME`]; a header block is at most [`h2frame::MAX_HEADER_BLOCK`] and the
//! reader's buffer never grows past it; a PING is 8 bytes, a SETTINGS whole entries, and no more
//! than [`MAX_SETTINGS_PER_SECOND`] are taken in one second; a `:status` is three
//! digits; and the frames are the same whether the bytes come in one read or seven at a time.
//! [`check`] is also what the libFuzzer target `fuzz/fuzz_targets/h2_client.rs` calls (feature
//! `fuzzing`).

use super::h2frame::{self, HEAD, MAX_FRAME, MAX_HEADER_BLOCK};
use super::h2read::{Frame, MAX_SETTINGS_PER_SECOND, Reader, Violation};

/// What a frame taken was, in short: its kind, stream, length and a hash of its bytes.
type Taken = (u8, u32, usize, u64);

/// FNV-1a of `b`.
fn hash(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Reads `data` in reads of at most `read` bytes into a connection's buffer, as `Connection::fill`
/// and `frames_in` do: the frames taken (checked), and how the connection ended (None: the bytes
/// ran out first).
fn read_all(data: &[u8], read: usize) -> Result<(Vec<Taken>, Option<Violation>), String> {
    let mut buf = vec![0u8; 4 * (MAX_FRAME + HEAD)];
    let (mut pos, mut end, mut fed) = (0, 0, 0);
    let mut reader = Reader::default();
    let mut taken = Vec::new();
    let mut settings = 0u32;
    loop {
        if pos == end {
            (pos, end) = (0, 0);
        } else if end == buf.len() {
            buf.copy_within(pos..end, 0);
            (pos, end) = (0, end - pos);
        }
        if end == buf.len() {
            return Err(format!("a full buffer of {end} bytes holds no whole frame"));
        }
        let n = read.min(buf.len() - end).min(data.len() - fed);
        if n == 0 {
            return Ok((taken, None));
        }
        buf[end..end + n].copy_from_slice(&data[fed..fed + n]);
        (end, fed) = (end + n, fed + n);
        loop {
            let rest = &buf[pos..end];
            let (frame, size) = match reader.next(rest, 0) {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(v) => return Ok((taken, Some(v))),
            };
            if size < HEAD || size > rest.len() || size - HEAD > MAX_FRAME {
                return Err(format!("a frame of {size} bytes taken from {}", rest.len()));
            }
            let t = match frame {
                Frame::Data {
                    stream, body, taken: t, ..
                } => {
                    if body > t || t != size - HEAD {
                        return Err(format!("DATA of {body} bytes in {t}, a frame of {size}"));
                    }
                    (0, stream, body, 0)
                }
                Frame::Head { stream, block, .. } => {
                    if block.len() > MAX_HEADER_BLOCK {
                        return Err(format!("a header block of {} bytes", block.len()));
                    }
                    // Three digits (as over HTTP/1.1, "001" reads as 1 and is counted as "other").
                    if let Ok(head) = h2frame::response_head(block)
                        && head.status.is_some_and(|s| s > 999)
                    {
                        return Err(format!("a :status of {:?}", head.status));
                    }
                    (1, stream, block.len(), hash(block))
                }
                Frame::Reset { stream } => (3, stream, 0, 0),
                Frame::Settings(p) => {
                    settings += 1;
                    if p.len() % 6 != 0 || settings > MAX_SETTINGS_PER_SECOND {
                        return Err(format!("SETTINGS {settings} of {} bytes", p.len()));
                    }
                    (4, 0, p.len(), hash(p))
                }
                Frame::Ping(p) => {
                    if p.len() != 8 {
                        return Err(format!("a PING of {} bytes", p.len()));
                    }
                    (6, 0, 8, hash(p))
                }
                Frame::GoAway { last } => (7, last, 0, 0),
                Frame::Other => (0xff, 0, size, 0),
            };
            taken.push(t);
            pos += size;
            if reader.block_capacity() > MAX_HEADER_BLOCK {
                return Err(format!("the block buffer grew to {}", reader.block_capacity()));
            }
        }
    }
}

/// Reads `data` as a connection's server bytes; what went wrong, if anything.
pub(crate) fn check(data: &[u8]) -> Result<(), String> {
    let whole = read_all(data, usize::MAX)?;
    let seven = read_all(data, 7)?;
    if whole != seven {
        return Err(format!(
            "read whole: {} frames, {:?}; seven bytes a read: {} frames, {:?}",
            whole.0.len(),
            whole.1,
            seven.0.len(),
            seven.1
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    /// What servers send: nginx's and h2's first flights, answers whole and cut, and floods.
    fn seeds() -> Vec<Vec<u8>> {
        // SETTINGS: max streams 128, initial window 65535, max frame 16384; then a window update.
        let settings = [
            frame(
                4,
                0,
                0,
                &[0, 3, 0, 0, 0, 128, 0, 4, 0, 0, 0xff, 0xff, 0, 5, 0, 0, 0x40, 0],
            ),
            frame(8, 0, 0, &[0, 0x0f, 0, 1]),
            frame(4, 1, 0, &[]),
        ]
        .concat();
        // :status 200, content-length 5 (literal without indexing, raw), then the body.
        let head = [0x88, 0x0f, 0x0d, 0x01, b'5'];
        let answer = [frame(1, 4, 1, &head), frame(0, 1, 1, b"hello")].concat();
        // Padded (2 bytes) with priority; Huffman "302"; then trailers ending the stream.
        let padded = [
            frame(
                1,
                0x4 | 0x8 | 0x20,
                3,
                &[2, 0, 0, 0, 1, 16, 0x48, 0x82, 0x64, 0x02, 0, 0],
            ),
            frame(0, 0x8, 3, &[3, b'a', b'b', 0, 0, 0]),
            frame(1, 0x5, 3, &[0x40, 1, b'x', 1, b'y']),
        ]
        .concat();
        // A head cut into a HEADERS and two CONTINUATIONs.
        let cut = [
            frame(1, 0, 5, &[0x88, 0x0f]),
            frame(9, 0, 5, &[0x0d, 0x02]),
            frame(9, 4, 5, b"10"),
            frame(0, 1, 5, b"0123456789"),
        ]
        .concat();
        let control = [
            frame(6, 0, 0, &[1, 2, 3, 4, 5, 6, 7, 8]),
            frame(6, 1, 0, &[0; 8]),
            frame(3, 0, 7, &[0, 0, 0, 8]),
            frame(2, 0, 9, &[0, 0, 0, 1, 16]),
            frame(7, 0, 0, &[0, 0, 0, 5, 0, 0, 0, 0]),
        ]
        .concat();
        let push = frame(5, 4, 1, &[0, 0, 0, 2, 0x82]);
        let pings = frame(6, 0, 0, &[7; 8]).repeat(64);
        let many_settings = frame(4, 0, 0, &[]).repeat(24);
        let continuations = [frame(1, 0, 1, &[0x88]), frame(9, 0, 1, &[0; 9000]).repeat(9)].concat();
        vec![
            [settings.clone(), answer.clone()].concat(),
            [settings.clone(), padded].concat(),
            [settings.clone(), cut].concat(),
            [settings.clone(), control, answer].concat(),
            [settings.clone(), push].concat(),
            pings,
            many_settings,
            [settings, continuations].concat(),
        ]
    }

    #[test]
    fn fuzz_h2_client_frames() {
        let seeds = seeds();
        for s in &seeds {
            check(s).unwrap_or_else(|e| panic!("a seed: {e}"));
        }
        let figures = crate::fuzz::run("h2_client", &seeds, check);
        assert_eq!(figures.inputs, u64::from(crate::fuzz::cases()));
    }
}
