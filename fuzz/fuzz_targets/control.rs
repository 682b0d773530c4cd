//! libFuzzer over the control protocol's decoders (preamble, data header, frames, messages).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| linerate_core::fuzzing::control(data));
