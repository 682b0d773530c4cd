//! libFuzzer over the HTTP/2 client's frame reader (what a server sends, issue 39).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| linerate_core::fuzzing::h2_client(data));
