//! An HTTP test, this end's half: the client loads an HTTP server on this host; the agent only
//! samples the host from `started` until the client says the run is over.

use super::State;
use super::profile::Applied;
use super::session::{Quiet, Refusal, await_start, new_cookie, proto_refusal, run_and_report, send_accepted};
use crate::proto::Message;
use crate::proto::conn::Conn;
use crate::spec::HttpSpec;

/// An HTTP test: the client loads an HTTP server on this host; the agent samples the host from
/// `started` until the client says the run is over.
pub(super) fn run(
    state: &State,
    conn: &mut Conn,
    spec: &HttpSpec,
    profile: &mut Option<Applied<'_>>,
) -> Result<(), Refusal> {
    let cookie = new_cookie();
    send_accepted(conn, state, &cookie, Vec::new())?;
    await_start(conn, profile)?;
    conn.send(&Message::Started).map_err(proto_refusal)?;
    let peer = Some(conn.peer().ip());
    run_and_report(state, conn, peer, profile, |control| {
        Ok(crate::engine::http::sample_host(spec, &mut Quiet, control))
    })
}
