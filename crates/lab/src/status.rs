//! A lab as it stands: its state file joined with what is alive now (agents, the relay) and
//! the counters of what the emulation did (nftables drops, the relay's ports). Out comes the
//! result document's [`LabRecord`]: what `lab status` prints and what a result measured in the
//! lab stores.

use crate::daemons::alive;
use crate::loss::loss_drops;
use crate::relay::PortStats;
use crate::state::{LabState, state_dir};
use linerate_core::result::lab::{LabHostRecord, LabRecord, RelayRecord};

/// The relay's counters, when the lab has one and it has written them.
pub fn relay_stats(state: &LabState) -> Option<Vec<PortStats>> {
    state.relay_pid?;
    let text = std::fs::read_to_string(state_dir(&state.name).join("relay-stats.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Everything `lab status` shows; also what a result measured in a lab records.
pub fn status(state: &LabState) -> LabRecord {
    let hosts = state
        .hosts
        .iter()
        .map(|h| LabHostRecord {
            name: h.name.clone(),
            namespace: h.namespace.clone(),
            address: h.address.clone(),
            agent: h.agent.clone(),
            agent_running: h.agent_pid.is_some_and(alive),
            link: h.link.clone(),
            link_text: h.link.describe(),
            backends: h.backends.clone(),
            http: h.http.clone(),
            // Without netem, loss is nftables' and its counters say what it dropped.
            loss_drops: (h.link.loss_percent.is_some() && !state.netem).then(|| loss_drops(state, &h.name)),
            queues: h.queues.clone(),
        })
        .collect();
    LabRecord {
        schema: linerate_core::result::SCHEMA,
        name: state.name.clone(),
        topology: state.topology.clone(),
        netem: state.netem,
        hosts,
        relay: state.relay_pid.map(|pid| RelayRecord {
            pid,
            running: alive(pid),
            ports: relay_stats(state),
        }),
    }
}
