//! Entry points for coverage-guided fuzzers (feature `fuzzing`; the cargo-fuzz targets in
//! `fuzz/`): each feeds one input to the decoders and panics on what the proptest harness
//! (`crate::fuzz`) would report, so libFuzzer records it as a crash. Not an API.

/// The control protocol's decoders: preamble, data header, frames at both limits, messages.
pub fn control(data: &[u8]) {
    if let Err(e) = crate::proto::fuzz::check(data) {
        panic!("control decoders: {e}");
    }
}

/// The HTTP server's request parser.
pub fn http(data: &[u8]) {
    if let Err(e) = crate::httpd::fuzz::check(data) {
        panic!("http parser: {e}");
    }
}

/// The iperf3 client's reader of a server's results message, and its checks.
pub fn iperf3_results(data: &[u8]) {
    if let Err(e) = crate::client::iperf3_fuzz_check(data) {
        panic!("iperf3 results reader: {e}");
    }
}

/// The HTTP/2 client's frame reader.
pub fn h2_client(data: &[u8]) {
    if let Err(e) = crate::engine::http::h2fuzz::check(data) {
        panic!("HTTP/2 client frame reader: {e}");
    }
}
