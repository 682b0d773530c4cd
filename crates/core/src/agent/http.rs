//! An HTTP test, this end's half: the client loads an HTTP server on this host; the agent only
//! samples the host from `started` until the client says the run is over.

use super::session::{Quiet, Refusal, Test, new_cookie};
use crate::spec::HttpSpec;

pub(super) fn run(t: &mut Test<'_, '_>, spec: &HttpSpec) -> Result<(), Refusal> {
    let cookie = new_cookie();
    t.accepted(&cookie, Vec::new())?;
    t.await_start()?;
    t.started()?;
    let peer = Some(t.conn.peer().ip());
    t.run_and_report(peer, |control| {
        Ok(crate::engine::http::sample_host(spec, &mut Quiet, control))
    })
}
