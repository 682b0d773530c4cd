//! libFuzzer over the iperf3 client's reader of a server's results message and its checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| linerate_core::fuzzing::iperf3_results(data));
