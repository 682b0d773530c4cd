//! Self probes on the HTTP/2 load connections (`--http2` with `--probe`): at the probe rate, a
//! small GET on a stream of its own on one of the worker's load connections, round robin over
//! them, timed apart from the load's requests and counted in none of the load's figures (its
//! bytes are on the wire, so in the connection's bytes). A connection carries one probe at a
//! time; a probe due when none can take one is counted unsent. The workers share the rate: each
//! sends every `threads`-th probe, their schedules interleaved.

use super::Ctx;
use crate::engine::http::SentProbe;
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::task::Waker;

/// A worker's self probes: its schedule, its connections' boxes, what they measured.
pub(super) struct LoadProbes {
    /// The first probe of this worker (ns since time zero) and the spacing of its probes.
    first_ns: u64,
    gap_ns: u64,
    pub timeout_ns: u64,
    /// Each URL's probe request as an HPACK block (literals, no indexing).
    pub blocks: Vec<Vec<u8>>,
    boxes: RefCell<Vec<Weak<ProbeBox>>>,
    turn: Cell<usize>,
    pub done: RefCell<Vec<SentProbe>>,
    pub sent: Cell<u64>,
    pub unsent: Cell<u64>,
}

/// Where the schedule hands a connection its probe: when it is due, and the connection's task
/// to wake for it.
#[derive(Default)]
pub(super) struct ProbeBox {
    pub due: Cell<Option<u64>>,
    /// A probe handed over and not yet ended.
    pub busy: Cell<bool>,
    pub waker: RefCell<Option<Waker>>,
}

/// A probe written on a connection: its stream, when it went (ns since time zero), its status.
#[derive(Clone, Copy)]
pub(super) struct ProbeOut {
    pub stream: u32,
    pub sent_ns: u64,
    pub status: u16,
}

impl LoadProbes {
    /// Worker `w` of `threads`: every `threads`-th probe of `gap_ns`, from `w`'s share of it;
    /// the first a gap after time zero, when the load's first connections are open.
    pub fn new(w: usize, threads: usize, gap_ns: u64, timeout_ns: u64, blocks: Vec<Vec<u8>>) -> LoadProbes {
        LoadProbes {
            first_ns: gap_ns * (w as u64 + 1),
            gap_ns: gap_ns * threads as u64,
            timeout_ns,
            blocks,
            boxes: RefCell::new(Vec::new()),
            turn: Cell::new(0),
            done: RefCell::new(Vec::new()),
            sent: Cell::new(0),
            unsent: Cell::new(0),
        }
    }

    /// A new connection's box (once per connection).
    pub fn join(&self) -> Rc<ProbeBox> {
        let b = Rc::new(ProbeBox::default());
        let mut boxes = self.boxes.borrow_mut();
        boxes.retain(|w| w.strong_count() > 0);
        boxes.push(Rc::downgrade(&b));
        b
    }

    /// A probe sent at `sent_ns` ended: answered after `rtt_ns`, or lost (None).
    pub fn ended(&self, b: &ProbeBox, sent_ns: u64, rtt_ns: Option<u64>) {
        b.busy.set(false);
        self.done.borrow_mut().push(SentProbe { sent_ns, rtt_ns });
    }

    /// Hands the probe due at `due` to the next connection free for one, round robin.
    fn hand_over(&self, due: u64) {
        let boxes = self.boxes.borrow();
        let n = boxes.len();
        for k in 0..n {
            let i = (self.turn.get() + k) % n;
            let Some(b) = boxes[i].upgrade() else {
                continue;
            };
            if b.busy.get() {
                continue;
            }
            self.turn.set(i + 1);
            b.busy.set(true);
            b.due.set(Some(due));
            if let Some(w) = b.waker.borrow().as_ref() {
                w.wake_by_ref();
            }
            return;
        }
        self.unsent.set(self.unsent.get() + 1);
    }
}

/// The worker's probe schedule, until the load ends.
pub(super) async fn schedule(ctx: Rc<Ctx>) {
    let Some(p) = ctx.probes.as_ref() else {
        return;
    };
    let mut next = p.first_ns;
    while next < ctx.times.end_ns {
        tokio::time::sleep_until(ctx.at(next)).await;
        p.hand_over(next);
        next += p.gap_ns;
    }
}
