//! How a failed request is classed: a socket error by its errno (the client's own limits apart
//! from the server's faults), a failed TLS handshake by what failed in it.

use super::super::tls::Failure;
use super::HttpErrors;
use std::io;

/// Which error class an I/O error falls in. The client's own limits come first: they say
/// nothing about the server.
pub(in crate::engine::http) fn classify(e: &io::Error) -> fn(&mut HttpErrors) -> &mut u64 {
    if let Some(libc::EMFILE | libc::ENFILE | libc::EADDRNOTAVAIL | libc::ENOBUFS) = e.raw_os_error() {
        return |x| &mut x.local_limit;
    }
    // A TLS record that failed after the handshake (`tls_steps::read_tls`).
    if e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>()) {
        return |x| &mut x.tls_protocol;
    }
    match e.kind() {
        io::ErrorKind::ConnectionRefused => |x| &mut x.refused,
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::UnexpectedEof => |x| &mut x.reset,
        io::ErrorKind::TimedOut => |x| &mut x.timeout,
        _ => |x| &mut x.other,
    }
}

/// Which class a failed handshake falls in when the socket failed under it.
pub(in crate::engine::http) fn failure_of_io(e: &io::Error) -> Failure {
    match e.kind() {
        io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted | io::ErrorKind::UnexpectedEof => {
            Failure::Protocol
        }
        _ => Failure::Other,
    }
}

/// The error class of a failed handshake (timeouts are found by the scan, `tls_timeout`).
pub(in crate::engine::http) fn tls_class(f: Failure) -> fn(&mut HttpErrors) -> &mut u64 {
    match f {
        Failure::Certificate => |x| &mut x.tls_certificate,
        Failure::Protocol => |x| &mut x.tls_protocol,
        Failure::Other => |x| &mut x.tls_other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class_of(e: io::Error) -> HttpErrors {
        let mut errors = HttpErrors::default();
        *classify(&e)(&mut errors) += 1;
        errors
    }

    #[test]
    fn the_clients_own_limits_are_local_limit_not_the_servers() {
        for errno in [libc::EMFILE, libc::ENFILE, libc::EADDRNOTAVAIL, libc::ENOBUFS] {
            let e = class_of(io::Error::from_raw_os_error(errno));
            assert_eq!((e.local_limit, e.total()), (1, 1), "errno {errno}");
        }
        assert_eq!(class_of(io::Error::from_raw_os_error(libc::ECONNREFUSED)).refused, 1);
        assert_eq!(class_of(io::Error::from_raw_os_error(libc::ECONNRESET)).reset, 1);
        assert_eq!(class_of(io::Error::other("x")).other, 1);
    }
}
