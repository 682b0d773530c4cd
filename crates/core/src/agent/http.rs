//! An HTTP test, this end's half: the client loads an HTTP server on this host; the agent only
//! samples the host from `started` until the client says the run is over, or until nothing has
//! moved on its interface toward the client for the idle limit (issue 22).

use super::session::{Quiet, Refusal, Test, new_cookie};
use crate::spec::HttpSpec;

pub(super) fn run(t: &mut Test<'_, '_>, spec: &HttpSpec) -> Result<(), Refusal> {
    let cookie = new_cookie();
    t.accepted(&cookie, Vec::new())?;
    t.await_start()?;
    t.started()?;
    let peer = t.conn.peer().ip();
    // The users' traffic crosses it: what moves there keeps the test from the idle rule.
    let towards = crate::metrics::host::interface_towards(peer);
    t.run_and_report(Some(peer), |control| {
        Ok(crate::engine::http::sample_host(
            spec,
            towards.as_deref(),
            &mut Quiet,
            control,
        ))
    })
}
