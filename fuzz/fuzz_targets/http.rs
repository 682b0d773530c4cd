//! libFuzzer over the HTTP server's request parser.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| linerate_core::fuzzing::http(data));
