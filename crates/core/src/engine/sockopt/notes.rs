//! What the result says about socket options: a note for every grant that differs from what was
//! asked, so that no cap passes silently. In: what was asked and the streams' read-back
//! grants; out: note lines. Setting options is left to `sockopt`.

use crate::result::{Role, SocketGrant, StreamReport};
use crate::spec::ZeroCopy;
use crate::units::ByteSize;

/// What was asked of this end's sockets, for [`grant_notes`]: a receive window, a send buffer,
/// an MSS (each None when not asked).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Asked {
    pub window: Option<ByteSize>,
    pub sndbuf: Option<ByteSize>,
    pub mss_bytes: Option<u32>,
}

/// A note for every setting the kernel granted differently from what was asked, with the
/// granted value. Buffers: the kernel reports double what it grants (socket(7)) and
/// caps a plain SO_RCVBUF/SO_SNDBUF at net.core.rmem_max / wmem_max; the smallest grant over
/// this end's streams of that role is the one named. MSS: the kernel's own figure leaves out TCP
/// options (up to 40 bytes) and follows the path MTU and the peer's MSS, so only a larger
/// difference, or a larger MSS, is noted.
pub(crate) fn grant_notes(asked: Asked, streams: &[StreamReport]) -> Vec<String> {
    let mut notes = Vec::new();
    let least = |role: Role, bytes: fn(&SocketGrant) -> u64| {
        streams
            .iter()
            .filter(|s| s.role == role)
            .map(|s| bytes(&s.socket) / 2)
            .min()
    };
    let buffers = [
        (
            "--window",
            asked.window,
            "net.core.rmem_max",
            least(Role::Receive, |g| g.rcvbuf_bytes),
        ),
        (
            "--sndbuf",
            asked.sndbuf,
            "net.core.wmem_max",
            least(Role::Send, |g| g.sndbuf_bytes),
        ),
    ];
    for (flag, want, sysctl, got) in buffers {
        if let (Some(want), Some(got)) = (want, got)
            && got < want.0
        {
            notes.push(format!(
                "{flag} {want} asked, {} granted ({sysctl}; run as root or raise it)",
                ByteSize(got)
            ));
        }
    }
    if let Some(want) = asked.mss_bytes
        && let Some(got) = streams.iter().map(|s| s.socket.mss_bytes).filter(|m| *m > 0).min()
        && (got + 40 < want || got > want)
    {
        notes.push(format!(
            "--mss {want} asked, {got} in use (the path MTU or the peer's MSS is lower)"
        ));
    }
    notes
}

/// Says whether `--busy-poll` applied: without CAP_NET_ADMIN the kernel refuses a
/// value above net.core.busy_read (the run then fails with that error), so a run that got here
/// has it; the note gives the value read back.
pub(crate) fn busy_poll_note(asked_us: u32, granted_us: Option<u32>) -> String {
    match granted_us {
        Some(got) if got == asked_us => format!("--busy-poll {asked_us} us granted (SO_BUSY_POLL read back)"),
        Some(got) => format!("--busy-poll {asked_us} us asked, {got} us granted (SO_BUSY_POLL read back)"),
        None => format!("--busy-poll {asked_us} us set; SO_BUSY_POLL could not be read back"),
    }
}

/// What one end saw of `--zerocopy`, for [`zerocopy_notes`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ZeroCopySeen {
    /// The path asked for; None when writes copy.
    pub asked: Option<ZeroCopy>,
    /// The sends went through io_uring (`--depth` above 1), which has no zero-copy path here.
    pub io_uring: bool,
    /// Sending streams whose worker could not make its memory file (sendfile) and copied.
    pub fell_back: u64,
    /// MSG_ZEROCOPY sends the kernel reported complete, and of those the ones it copied.
    pub completed: u64,
    pub copied: u64,
}

/// Makes each sending stream's grant say the path its bytes really took (cleared where they were
/// copied after all) and returns a note for every refusal or fallback, and for MSG_ZEROCOPY how
/// many completed sends the kernel reported as copied (SO_EE_CODE_ZEROCOPY_COPIED: it copies
/// when the pages go to a local socket, as over loopback, or the device cannot gather them).
/// Receiving streams copy either way and are left out.
pub(crate) fn zerocopy_notes(seen: ZeroCopySeen, streams: &mut [StreamReport]) -> Vec<String> {
    let Some(asked) = seen.asked else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    let sending = streams.iter().filter(|s| s.role == Role::Send).count();
    if sending == 0 {
        return notes;
    }
    let why = if seen.io_uring {
        Some(format!(
            "--zerocopy {asked} does not apply with --depth above 1 (io_uring): the writes copied"
        ))
    } else if seen.fell_back > 0 {
        Some(format!(
            "--zerocopy {asked}: no memory file could be made (memfd_create): the writes copied"
        ))
    } else {
        None
    };
    if let Some(why) = why {
        for s in streams.iter_mut() {
            s.socket.zerocopy = None;
        }
        notes.push(why);
        return notes;
    }
    let refused = streams
        .iter()
        .filter(|s| s.role == Role::Send && s.socket.zerocopy.is_none())
        .count();
    if refused > 0 {
        notes.push(format!(
            "--zerocopy {asked}: the kernel refused SO_ZEROCOPY on {refused} of {sending} sending streams: they copied"
        ));
    }
    if asked == ZeroCopy::Msg && seen.completed > 0 {
        notes.push(if seen.copied > 0 {
            format!(
                "MSG_ZEROCOPY: the kernel copied {} of {} completed sends (SO_EE_CODE_ZEROCOPY_COPIED; it always does to a local socket, as over loopback)",
                seen.copied, seen.completed
            )
        } else {
            format!("MSG_ZEROCOPY: all {} completed sends were zero-copy", seen.completed)
        });
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{ErrorCounts, StreamEnd};

    fn stream(role: Role, socket: SocketGrant) -> StreamReport {
        StreamReport {
            stream: 0,
            role,
            bytes: 0,
            ops: 0,
            seconds: 0.0,
            total_bytes: 0,
            socket,
            tcp: None,
            errors: ErrorCounts::default(),
            end: StreamEnd::Deadline,
            udp_send: None,
            udp_receive: None,
            rr: None,
        }
    }

    #[test]
    fn issue_13_a_capped_window_is_noted_with_its_grant() {
        let capped = SocketGrant {
            rcvbuf_bytes: 2 * (8 << 20),
            sndbuf_bytes: 2 * (4 << 20),
            mss_bytes: 1448,
            ..Default::default()
        };
        let streams = [stream(Role::Receive, capped.clone()), stream(Role::Send, capped)];
        let asked = Asked {
            window: Some(ByteSize(16 << 20)),
            sndbuf: Some(ByteSize(4 << 20)),
            mss_bytes: Some(1460),
        };
        assert_eq!(
            grant_notes(asked, &streams),
            ["--window 16 MiB asked, 8 MiB granted (net.core.rmem_max; run as root or raise it)"]
        );
        let asked = Asked {
            window: Some(ByteSize(8 << 20)),
            sndbuf: Some(ByteSize(8 << 20)),
            mss_bytes: Some(9000),
        };
        assert_eq!(
            grant_notes(asked, &streams),
            [
                "--sndbuf 8 MiB asked, 4 MiB granted (net.core.wmem_max; run as root or raise it)",
                "--mss 9000 asked, 1448 in use (the path MTU or the peer's MSS is lower)"
            ]
        );
        assert!(
            grant_notes(Asked::default(), &streams).is_empty(),
            "nothing asked, nothing noted"
        );
    }

    #[test]
    fn issue_13_busy_poll_says_whether_it_applied() {
        assert_eq!(
            busy_poll_note(50, Some(50)),
            "--busy-poll 50 us granted (SO_BUSY_POLL read back)"
        );
        assert_eq!(
            busy_poll_note(50, Some(0)),
            "--busy-poll 50 us asked, 0 us granted (SO_BUSY_POLL read back)"
        );
    }
    #[test]
    fn issue_28_zerocopy_refusals_fall_back_with_a_note_and_the_grant_cleared() {
        let granted = SocketGrant {
            zerocopy: Some(ZeroCopy::Msg),
            ..Default::default()
        };
        let mut streams = [
            stream(Role::Send, granted.clone()),
            stream(Role::Send, SocketGrant::default()),
            stream(Role::Receive, SocketGrant::default()),
        ];
        let seen = ZeroCopySeen {
            asked: Some(ZeroCopy::Msg),
            completed: 10,
            copied: 10,
            ..Default::default()
        };
        assert_eq!(
            zerocopy_notes(seen, &mut streams),
            [
                "--zerocopy msg: the kernel refused SO_ZEROCOPY on 1 of 2 sending streams: they copied",
                "MSG_ZEROCOPY: the kernel copied 10 of 10 completed sends (SO_EE_CODE_ZEROCOPY_COPIED; it always does to a local socket, as over loopback)"
            ]
        );
        assert_eq!(
            streams[0].socket.zerocopy,
            Some(ZeroCopy::Msg),
            "a granted path is kept"
        );
        let uring = ZeroCopySeen { io_uring: true, ..seen };
        assert_eq!(
            zerocopy_notes(uring, &mut streams),
            ["--zerocopy msg does not apply with --depth above 1 (io_uring): the writes copied"]
        );
        assert!(streams.iter().all(|s| s.socket.zerocopy.is_none()), "no path claimed");
        let receiving = &mut streams[2..];
        assert!(
            zerocopy_notes(seen, receiving).is_empty(),
            "receives copy anyway: no note"
        );
        assert!(
            zerocopy_notes(ZeroCopySeen::default(), &mut streams).is_empty(),
            "not asked"
        );
    }
}
