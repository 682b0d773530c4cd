//! A chunked request body (RFC 9112 §7.1) read and dropped as it arrives: the upload sink's
//! framing over HTTP/1.1 when a client does not know its body's length in advance (Go's client
//! and curl send one so). A state machine over whatever part of the body the read buffer holds:
//! it keeps no bytes, only where it is and how much of the chunk is left, so extensions and
//! trailers of any length cost nothing but the reading.

/// Where the decoder is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// In a chunk-size line's hex digits (`digits` of them so far).
    Size {
        digits: u8,
    },
    /// After the size: an extension, skipped to the line's end.
    Extension,
    /// The size line's CR was read: its LF next.
    SizeLf,
    /// In a chunk's data.
    Data,
    /// After a chunk's data: its CRLF.
    DataCr,
    DataLf,
    /// At the start of a trailer line (or of the empty line that ends the body).
    TrailerStart,
    /// In a trailer field line, skipped to its end.
    Trailer,
    /// The final empty line's CR was read: its LF next.
    EndLf,
    Done,
}

/// How far a chunked body has been read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Chunked {
    state: State,
    /// Data bytes left in the current chunk (while in a size line: the size so far).
    left: u64,
}

/// What [`Chunked::feed`] made of some bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Fed {
    /// Bytes of the input taken (all of it, unless the body ended inside it).
    pub(super) used: usize,
    /// Of those, chunk data.
    pub(super) data: u64,
    /// The body ended (after its last trailer line).
    pub(super) done: bool,
}

/// A chunk size over 16 hex digits does not fit a u64: the body is malformed.
const MAX_SIZE_DIGITS: u8 = 16;

impl Chunked {
    pub(super) fn new() -> Chunked {
        Chunked {
            state: State::Size { digits: 0 },
            left: 0,
        }
    }

    /// Reads `input`, the next bytes of the body; Err when they break the framing.
    pub(super) fn feed(&mut self, input: &[u8]) -> Result<Fed, ()> {
        let mut i = 0;
        let mut data = 0u64;
        while i < input.len() && self.state != State::Done {
            if self.state == State::Data {
                let n = self.left.min((input.len() - i) as u64);
                i += n as usize;
                data += n;
                self.left -= n;
                if self.left == 0 {
                    self.state = State::DataCr;
                }
                continue;
            }
            let b = input[i];
            i += 1;
            self.state = match (self.state, b) {
                (State::Size { digits }, _) if b.is_ascii_hexdigit() => {
                    if digits == MAX_SIZE_DIGITS {
                        return Err(());
                    }
                    let d = (b as char).to_digit(16).map_or(0, u64::from);
                    self.left = self.left << 4 | d;
                    State::Size { digits: digits + 1 }
                }
                (State::Size { digits: 0 }, _) => return Err(()),
                (State::Size { .. }, b';' | b' ' | b'\t') => State::Extension,
                (State::Size { .. } | State::Extension, b'\r') => State::SizeLf,
                (State::Size { .. } | State::Extension | State::SizeLf, b'\n') => self.size_line_ended(),
                (State::Size { .. } | State::SizeLf, _) => return Err(()),
                (State::Extension, _) => State::Extension,
                (State::DataCr, b'\r') => State::DataLf,
                (State::DataCr | State::DataLf, b'\n') => State::Size { digits: 0 },
                (State::DataCr | State::DataLf, _) => return Err(()),
                (State::TrailerStart, b'\r') => State::EndLf,
                (State::TrailerStart | State::EndLf, b'\n') => State::Done,
                (State::EndLf, _) => return Err(()),
                (State::Trailer, b'\n') => State::TrailerStart,
                (State::TrailerStart | State::Trailer, _) => State::Trailer,
                // Neither takes a byte here: data is taken above, and the loop ends at Done.
                (s @ (State::Data | State::Done), _) => s,
            };
        }
        Ok(Fed {
            used: i,
            data,
            done: self.state == State::Done,
        })
    }

    fn size_line_ended(&mut self) -> State {
        if self.left == 0 {
            State::TrailerStart
        } else {
            State::Data
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `body` in pieces of `step` bytes: the data counted and whether it ended, and where.
    fn read(body: &[u8], step: usize) -> Result<(u64, Option<usize>), ()> {
        let mut c = Chunked::new();
        let mut data = 0;
        let mut at = 0;
        for piece in body.chunks(step) {
            let fed = c.feed(piece)?;
            data += fed.data;
            at += fed.used;
            if fed.done {
                return Ok((data, Some(at)));
            }
            assert_eq!(fed.used, piece.len());
        }
        Ok((data, None))
    }

    #[test]
    fn chunked_bodies_are_counted_to_their_end_in_any_pieces() {
        let body = b"5\r\nhello\r\n1a;name=v\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\nGET / HTTP/1.1\r\n";
        let end = body.len() - b"GET / HTTP/1.1\r\n".len();
        for step in [1, 2, 3, 7, 64, body.len()] {
            assert_eq!(read(body, step), Ok((31, Some(end))), "step {step}");
        }
        assert_eq!(read(b"0\r\n\r\n", 1), Ok((0, Some(5))));
        assert_eq!(read(b"0\n\n", 1), Ok((0, Some(3))));
        assert_eq!(read(b"A\r\n0123456789\r\n", 4), Ok((10, None)));
        assert_eq!(read(b"ffffffffffffffff\r\n", 5), Ok((0, None)));
    }

    #[test]
    fn broken_framing_is_an_error() {
        for bad in [
            &b"\r\n"[..],
            b"x\r\n",
            b";e\r\n",
            b"5\r\nhello!",
            b"5\r\nhello\rx",
            b"5\rx",
            b"0\r\n\rx",
            b"10000000000000000\r\n",
        ] {
            assert_eq!(read(bad, 1), Err(()), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
