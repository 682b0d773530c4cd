//! The host's samples and configuration as a document holds them: the types only. Core's
//! `metrics` reads the kernel's counters and files and fills them in.

pub mod cpu;
pub mod doctor;
pub mod host;
pub mod sample;
