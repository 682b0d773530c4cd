//! The load's time zero as the runner sets it, kept for what runs beside a test (latency
//! probes) to put its own times on the test's axis: every kind's probes use it.

use crate::engine::Sink;
use crate::result::{IntervalSample, Role};
use std::time::Instant;

/// A sink in front of the run's own that keeps the load's time zero as the runner tells it
/// ([`Sink::zero`]), for the probes beside the load to be put on its axis.
pub struct ZeroClock<'a> {
    inner: &'a mut dyn Sink,
    zero: Option<Instant>,
}

impl<'a> ZeroClock<'a> {
    pub fn new(inner: &'a mut dyn Sink) -> ZeroClock<'a> {
        ZeroClock { inner, zero: None }
    }

    /// The load's time zero (None: the run never started its clock).
    pub fn time_zero(&self) -> Option<Instant> {
        self.zero
    }
}

impl Sink for ZeroClock<'_> {
    fn start(&mut self, streams: &[(u16, Role)]) {
        self.inner.start(streams);
    }

    fn zero(&mut self, at: Instant) {
        self.zero = Some(at);
        self.inner.zero(at);
    }

    fn interval(&mut self, samples: &[IntervalSample]) {
        self.inner.interval(samples);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_load_s_zero_is_the_one_the_runner_tells_and_passes_on() {
        struct Keeps(Option<Instant>);
        impl Sink for Keeps {
            fn zero(&mut self, at: Instant) {
                self.0 = Some(at);
            }
            fn interval(&mut self, _: &[IntervalSample]) {}
        }
        let mut inner = Keeps(None);
        let mut clock = ZeroClock::new(&mut inner);
        assert_eq!(clock.time_zero(), None);
        let at = Instant::now();
        Sink::zero(&mut clock, at);
        assert_eq!(clock.time_zero(), Some(at));
        assert_eq!(inner.0, Some(at));
    }
}
