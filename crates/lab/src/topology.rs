//! Making and removing a lab: namespaces, veth pairs, the switch (a bridge or the relay's
//! ports), addresses, hosts files, the shaping of each host's link (both ways) and its agent.
//! Options in, a [`LabState`] out (saved after each step); [`down`] removes whatever a lab left,
//! state file or not.

use crate::cmd::{lab_namespaces, need_root_and_ip, run, which};
use crate::daemons::{agent_ready, alive, kill_and_wait, spawn_agent, start_relay};
use crate::link::{self, LinkSpec};
use crate::loss::drop_in_kernel;
use crate::net;
use crate::queue::{check_aqms, kernel_has_qdisc};
use crate::shape::{egress_rates, shape_egress, shape_ingress};
use crate::state::{LabHost, LabState, check_name, file_error, load, save, state_dir, write_secret};
use crate::{AGENT_PORT, LabError, SUBNET};
use linerate_core::result::lab::Backends;
use std::path::Path;

pub struct UpOptions {
    pub name: String,
    pub hosts: usize,
    pub links: Vec<String>,
    /// Refuse netem even where the kernel has it (to exercise the fallback).
    pub no_netem: bool,
    /// `NAME=COMMAND` profiles every host's agent is started with (`serve --profile`).
    pub profiles: Vec<String>,
}

/// Creates a lab. On any failure, whatever was made is removed again.
pub fn up(opts: &UpOptions) -> Result<LabState, LabError> {
    check_name(&opts.name)?;
    if !(2..=200).contains(&opts.hosts) {
        return Err(LabError::Hosts(opts.hosts));
    }
    let specs = link::resolve(&opts.links, opts.hosts)?;
    need_root_and_ip()?;
    if specs.iter().any(|s| s.loss_percent.is_some_and(|p| p > 0.0)) && which("nft").is_none() {
        return Err(LabError::NoNft);
    }
    if state_dir(&opts.name).exists() || !lab_namespaces(&opts.name).is_empty() {
        return Err(LabError::Exists(opts.name.clone()));
    }
    check_aqms(&opts.name, &opts.links, &specs)?;
    let result = build(opts, specs);
    if result.is_err() {
        let _ = down(&opts.name);
    }
    result
}

fn build(opts: &UpOptions, specs: Vec<LinkSpec>) -> Result<LabState, LabError> {
    let name = &opts.name;
    let dir = state_dir(name);
    std::fs::create_dir_all(&dir).map_err(file_error("creating", &dir))?;
    let secret_file = dir.join("secret");
    write_secret(&secret_file)?;
    // A queue the spec sizes is tbf's, past the sending host: the relay's switch holds it
    // (netem's queue would be on the sender's eth0, where TCP small queues keep it short).
    let queued = specs.iter().any(LinkSpec::sets_queue);
    let netem = !opts.no_netem && !queued && kernel_has_qdisc(name, &["netem", "delay", "1ms"]);
    let relay = !netem && (queued || specs.iter().any(LinkSpec::needs_relay));
    let n = opts.hosts;
    let topology = if relay {
        "relay"
    } else if n == 2 {
        "point-to-point"
    } else {
        "bridge"
    };
    let mut hosts: Vec<LabHost> = (1..=n)
        .map(|x| LabHost {
            name: format!("h{x}"),
            namespace: format!("{name}-h{x}"),
            address: format!("{SUBNET}.{x}"),
            mac: format!("02:4c:52:00:{:02x}:{:02x}", x / 256, x % 256),
            link: specs[x - 1].clone(),
            backends: Backends::default(),
            agent: format!("{SUBNET}.{x}:{AGENT_PORT}"),
            agent_pid: None,
            http: Some(format!("{SUBNET}.{x}:{}", crate::HTTP_PORT)),
            queues: Vec::new(),
        })
        .collect();
    let mut state = LabState {
        name: name.clone(),
        topology: topology.into(),
        hosts: hosts.clone(),
        switch_namespace: None,
        relay_pid: None,
        secret_file: secret_file.clone(),
        netem,
        profiles: opts.profiles.clone(),
    };
    save(&state)?;
    for h in &hosts {
        run(&["ip", "netns", "add", &h.namespace])?;
        run(&["ip", "-n", &h.namespace, "link", "set", "lo", "up"])?;
    }
    let max_mtu = specs.iter().filter_map(|s| s.mtu).max();
    net::join_hosts(name, topology, &hosts, max_mtu, |sw| {
        state.switch_namespace = Some(sw.to_string());
        save(&state)
    })?;
    // Two hosts through the switch: both ways of their one link are held at its ports.
    let on_switch = queued && n == 2;
    let rates = egress_rates(&hosts, topology, on_switch);
    for (h, rate) in hosts.iter_mut().zip(rates) {
        net::configure_eth0(h, netem)?;
        shape_egress(h, netem, rate)?;
    }
    shape_ingress(&mut hosts, state.switch_namespace.as_deref(), netem, max_mtu, on_switch)?;
    if topology == "point-to-point"
        && let Some(m) = max_mtu
    {
        // Both ends must carry the larger frames for either to send them.
        for h in &hosts {
            if h.link.mtu.is_none() {
                run(&["ip", "-n", &h.namespace, "link", "set", "eth0", "mtu", &m.to_string()])?;
            }
        }
    }
    if !netem {
        drop_in_kernel(&mut hosts)?;
    }
    state.hosts = hosts.clone();
    save(&state)?;
    if relay {
        state.relay_pid = Some(start_relay(&state)?);
        for h in state.hosts.iter_mut() {
            let b = &mut h.backends;
            let l = &h.link;
            let by_relay = Some("linerate relay".to_string());
            if l.delay_us.is_some_and(|d| d > 0) {
                b.delay = by_relay.clone();
            }
            if l.jitter_us.is_some_and(|d| d > 0) {
                b.jitter = by_relay.clone();
            }
            if l.reorder_percent.is_some_and(|p| p > 0.0) {
                b.reorder = by_relay.clone();
            }
            if l.duplicate_percent.is_some_and(|p| p > 0.0) {
                b.duplicate = by_relay;
            }
        }
        save(&state)?;
    }
    write_hosts_files(&state)?;
    for i in 0..state.hosts.len() {
        let pid = spawn_agent(&state, i)?;
        state.hosts[i].agent_pid = Some(pid);
        save(&state)?;
    }
    for i in 0..state.hosts.len() {
        agent_ready(&state, i)?;
    }
    Ok(state)
}

fn write_hosts_files(state: &LabState) -> Result<(), LabError> {
    let mut text = String::from("127.0.0.1\tlocalhost\n::1\tlocalhost\n");
    for h in &state.hosts {
        text += &format!("{}\t{}\n", h.address, h.name);
    }
    for h in &state.hosts {
        let dir = Path::new("/etc/netns").join(&h.namespace);
        std::fs::create_dir_all(&dir).map_err(file_error("creating", &dir))?;
        let path = dir.join("hosts");
        std::fs::write(&path, &text).map_err(file_error("writing", &path))?;
    }
    Ok(())
}

/// Removes everything a lab made, whether or not its state file survived. Returns what it
/// removed, one line each; [`LabError::NoLab`] when there was nothing of that name.
pub fn down(name: &str) -> Result<Vec<String>, LabError> {
    check_name(name)?;
    need_root_and_ip()?;
    let mut removed = Vec::new();
    if let Ok(state) = load(name) {
        let pids: Vec<u32> = state
            .hosts
            .iter()
            .filter_map(|h| h.agent_pid)
            .chain(state.relay_pid)
            .filter(|&p| alive(p))
            .collect();
        kill_and_wait(&pids);
        removed.extend(pids.iter().map(|p| format!("process {p}")));
    }
    let namespaces = lab_namespaces(name);
    // Anything still running inside (agents of a crashed lab, commands from lab exec), all
    // stopped at once.
    let mut inside = Vec::new();
    for ns in &namespaces {
        for pid in run(&["ip", "netns", "pids", ns]).unwrap_or_default().split_whitespace() {
            if let Ok(pid) = pid.parse::<u32>() {
                inside.push(pid);
                removed.push(format!("process {pid} in {ns}"));
            }
        }
    }
    kill_and_wait(&inside);
    for ns in namespaces {
        run(&["ip", "netns", "del", &ns])?;
        removed.push(format!("namespace {ns} (and its veth ends)"));
        let etc = Path::new("/etc/netns").join(&ns);
        if etc.exists() {
            let _ = std::fs::remove_dir_all(&etc);
        }
    }
    let dir = state_dir(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(file_error("removing", &dir))?;
        removed.push(format!("state {}", dir.display()));
    }
    // Nothing of that name: a lab named wrong, said as `status` and `exec` say it.
    if removed.is_empty() {
        return Err(LabError::NoLab {
            name: name.to_string(),
            labs: crate::state::labs(),
        });
    }
    Ok(removed)
}
