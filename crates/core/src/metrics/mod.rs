//! Samplers of the host a test runs on: CPU time (`cpu`), the process's own use (`rusage`) and
//! what the host is (`host`). They read the kernel's counters and return plain values; the
//! engines decide when to read them (at the edges of the measurement window).

pub mod cpu;
pub mod host;
pub mod rusage;
