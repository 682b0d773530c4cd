//! `--zerocopy`: how a TCP sender hands its bytes to the kernel instead of copying them (issue
//! 28). The type, its parsing and its words; the engine (`engine::tcp::zerocopy`) does the sends
//! and the socket-option base (`engine::sockopt`) sets and reads back SO_ZEROCOPY.

use serde::{Deserialize, Serialize};

/// A zero-copy send path. Applies to sending streams only (receives copy either way).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZeroCopy {
    /// sendfile(2) from a memory file (memfd) holding one buffer, as `iperf3 -Z` does: the
    /// socket takes references to the file's pages.
    Sendfile,
    /// send(2) with MSG_ZEROCOPY on a socket with SO_ZEROCOPY: the kernel pins the buffer's
    /// pages and says when it is done with them on the socket's error queue (kernel
    /// Documentation/networking/msg_zerocopy.rst; it pays for writes above about 10 KB).
    Msg,
}

words!(ZeroCopy, "a zero-copy path", Sendfile => "sendfile", Msg => "msg");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_others_are_refused() {
        for z in [ZeroCopy::Sendfile, ZeroCopy::Msg] {
            assert_eq!(z.name().parse::<ZeroCopy>(), Ok(z));
            assert_eq!(serde_json::to_string(&z).expect("json"), format!("\"{z}\""));
        }
        assert!("splice".parse::<ZeroCopy>().is_err());
        assert!("".parse::<ZeroCopy>().is_err());
    }
}
