//! Samplers of the host a test runs on: CPU time (`cpu`), interrupts and softirqs (`irq`),
//! interfaces (`netdev`), the stack's counters (`snmp`), the process's own use (`rusage`), all
//! read together and turned into rates by `sample`; and what the host is (`host`: the
//! configuration), which `doctor` checks against tuning advice. They read the kernel's counters
//! and return plain values; the engines decide when to read them.

pub mod cpu;
pub mod doctor;
pub mod host;
pub(crate) mod irq;
pub mod netdev;
pub(crate) mod rusage;
pub mod sample;
pub(crate) mod snmp;
