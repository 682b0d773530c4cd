//! The messages of one sendmmsg or recvmmsg call, laid out before the clock starts: a buffer of
//! datagrams of one size, an iovec and a header per datagram pointing into it, and for a
//! receiver room for each datagram's control messages (its timestamp, its GRO segment size).
//! Nothing is allocated or resized while a stream runs; the headers point at the vectors'
//! elements, which stay where they are when the batch itself is moved.

/// One call's datagrams and the headers that point at them.
pub(super) struct Batch {
    /// The datagrams, `size` bytes each, one after the other (a byte pattern until written).
    pub(super) buf: Vec<u8>,
    pub(super) msgs: Vec<libc::mmsghdr>,
    /// Pointed at by `msgs`: kept for as long as they are.
    _iov: Vec<libc::iovec>,
    _control: Vec<u8>,
}

impl Batch {
    /// `count` datagrams of `size` bytes, each with `control_bytes` for its control messages
    /// (0: none, the header's control pointer left null).
    pub(super) fn new(size: usize, count: usize, control_bytes: usize) -> Batch {
        let mut buf = vec![0x5a_u8; size * count];
        let mut control = vec![0u8; control_bytes * count];
        let mut iov: Vec<libc::iovec> = (0..count)
            .map(|i| libc::iovec {
                iov_base: buf[i * size..].as_mut_ptr().cast(),
                iov_len: size,
            })
            .collect();
        let msgs = iov
            .iter_mut()
            .enumerate()
            .map(|(i, v)| {
                // SAFETY: mmsghdr is plain data; zeroed is a valid empty header.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = v;
                m.msg_hdr.msg_iovlen = 1;
                if control_bytes > 0 {
                    m.msg_hdr.msg_control = control[i * control_bytes..].as_mut_ptr().cast();
                }
                m
            })
            .collect();
        Batch {
            buf,
            msgs,
            _iov: iov,
            _control: control,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_header_points_at_its_datagram_and_its_control_room() {
        let b = Batch::new(100, 4, 64);
        assert_eq!(b.buf.len(), 400);
        assert_eq!(b.msgs.len(), 4);
        let control = b.msgs[0].msg_hdr.msg_control as usize;
        for (i, m) in b.msgs.iter().enumerate() {
            assert_eq!(m.msg_hdr.msg_iovlen, 1);
            // SAFETY: msg_iov points at the batch's own iovec `i`, alive as long as `b`.
            let v = unsafe { &*m.msg_hdr.msg_iov };
            assert_eq!(v.iov_len, 100);
            assert_eq!(v.iov_base as usize, b.buf.as_ptr() as usize + i * 100);
            assert_eq!(m.msg_hdr.msg_control as usize, control + i * 64);
        }
        // A sender's batch has no control room: the pointer stays null, as the kernel wants.
        let moved = Batch::new(10, 2, 0);
        let first = moved.buf.as_ptr() as usize;
        let moved = [moved];
        assert!(moved[0].msgs.iter().all(|m| m.msg_hdr.msg_control.is_null()));
        // SAFETY: as above; moving the batch moved no element.
        let v = unsafe { &*moved[0].msgs[1].msg_hdr.msg_iov };
        assert_eq!(v.iov_base as usize, first + 10);
    }
}
