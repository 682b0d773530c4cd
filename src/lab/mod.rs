//! `linerate lab`: emulated hosts and links on one machine, for users and for our own tests.
//!
//! A lab is a set of network namespaces (`LAB-h1` .. `LAB-hN`) with one veth each, joined point
//! to point (two hosts) or through a switch namespace (`LAB-sw`: a kernel bridge, or linerate's
//! user-space relay when packets must be delayed, reordered or duplicated and the kernel has no
//! netem). Every host gets an address in 10.211.0.0/24 (host X is 10.211.0.X; the range exists
//! only inside the lab), a hosts file naming h1..hN, and a `linerate serve` agent. What was made
//! is recorded under /run/linerate/labs/LAB so that `lab down` can remove it, also after a crash.

pub mod link;
pub mod relay;

use anyhow::{Context, bail};
use link::LinkSpec;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const DEFAULT_NAME: &str = "lab";
pub const SUBNET: &str = "10.211.0";
pub const AGENT_PORT: u16 = 5301;
const STATE_ROOT: &str = "/run/linerate/labs";

/// Which mechanism emulates each property of a host's egress.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Backends {
    pub rate: Option<String>,
    pub delay: Option<String>,
    pub jitter: Option<String>,
    pub loss: Option<String>,
    pub reorder: Option<String>,
    pub duplicate: Option<String>,
    pub mtu: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LabHost {
    pub name: String,
    pub namespace: String,
    pub address: String,
    pub mac: String,
    /// What this host's egress does to the packets it sends.
    pub link: LinkSpec,
    pub backends: Backends,
    /// HOST:PORT of its agent.
    pub agent: String,
    pub agent_pid: Option<u32>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LabState {
    pub name: String,
    /// "point-to-point", "bridge" or "relay".
    pub topology: String,
    pub hosts: Vec<LabHost>,
    pub switch_namespace: Option<String>,
    pub relay_pid: Option<u32>,
    pub secret_file: PathBuf,
    /// Whether this kernel has sch_netem (then netem emulates delay, loss and the rest).
    pub netem: bool,
}

pub fn state_dir(name: &str) -> PathBuf {
    Path::new(STATE_ROOT).join(name)
}

fn check_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 16
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-');
    anyhow::ensure!(ok, "lab name '{name}' must be 1-16 characters of a-z, 0-9 and '-'");
    Ok(())
}

fn need_root_and_ip() -> anyhow::Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("linerate lab needs root (it creates network namespaces)");
    }
    for tool in ["ip", "tc"] {
        if which(tool).is_none() {
            bail!("linerate lab needs '{tool}' from iproute2 (Debian: apt-get install iproute2)");
        }
    }
    Ok(())
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .chain(["/usr/sbin", "/sbin"])
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
}

/// Runs a command; its stderr becomes the error.
fn run(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .with_context(|| format!("running {}", args[0]))?;
    if !out.status.success() {
        bail!(
            "{} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn run_stdin(args: &[&str], input: &str) -> anyhow::Result<()> {
    let mut child = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {}", args[0]))?;
    child.stdin.take().expect("piped").write_all(input.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "{} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn namespaces() -> Vec<String> {
    run(&["ip", "netns", "list"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Namespaces that belong to lab `name`: NAME-hN, NAME-sw, NAME-probe.
fn lab_namespaces(name: &str) -> Vec<String> {
    namespaces()
        .into_iter()
        .filter(|ns| {
            ns.strip_prefix(name)
                .and_then(|r| r.strip_prefix('-'))
                .is_some_and(|r| {
                    r == "sw"
                        || r == "probe"
                        || r.strip_prefix('h')
                            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                })
        })
        .collect()
}

/// Whether the kernel has sch_netem: tried on the loopback of a throwaway namespace.
fn kernel_has_netem(name: &str) -> bool {
    let probe = format!("{name}-probe");
    if run(&["ip", "netns", "add", &probe]).is_err() {
        return false;
    }
    let ok = run(&["ip", "-n", &probe, "link", "set", "lo", "up"]).is_ok()
        && run(&[
            "tc", "-n", &probe, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms",
        ])
        .is_ok();
    let _ = run(&["ip", "netns", "del", &probe]);
    ok
}

pub struct UpOptions {
    pub name: String,
    pub hosts: usize,
    pub links: Vec<String>,
    /// Refuse netem even where the kernel has it (to exercise the fallback).
    pub no_netem: bool,
}

/// Creates a lab. On any failure, whatever was made is removed again.
pub fn up(opts: &UpOptions) -> anyhow::Result<LabState> {
    check_name(&opts.name)?;
    anyhow::ensure!(
        (2..=200).contains(&opts.hosts),
        "--hosts must be between 2 and 200, not {}",
        opts.hosts
    );
    let specs = link::resolve(&opts.links, opts.hosts)?;
    need_root_and_ip()?;
    if specs.iter().any(|s| s.loss_percent.is_some_and(|p| p > 0.0)) && which("nft").is_none() {
        bail!("loss= needs 'nft' (Debian: apt-get install nftables)");
    }
    if state_dir(&opts.name).exists() || !lab_namespaces(&opts.name).is_empty() {
        bail!(
            "lab '{}' exists (or left-overs of one): run 'linerate lab down --name {}' first",
            opts.name,
            opts.name
        );
    }
    let result = build(opts, specs);
    if result.is_err() {
        let _ = down(&opts.name);
    }
    result
}

fn build(opts: &UpOptions, specs: Vec<LinkSpec>) -> anyhow::Result<LabState> {
    let name = &opts.name;
    let dir = state_dir(name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let secret_file = dir.join("secret");
    let mut secret = [0u8; 24];
    rand_fill(&mut secret);
    write_private(&secret_file, &linerate_core::proto::to_hex(&secret))?;
    let netem = !opts.no_netem && kernel_has_netem(name);
    let relay = !netem && specs.iter().any(LinkSpec::needs_relay);
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
    };
    save(&state)?;
    for h in &hosts {
        run(&["ip", "netns", "add", &h.namespace])?;
        run(&["ip", "-n", &h.namespace, "link", "set", "lo", "up"])?;
    }
    let max_mtu = specs.iter().filter_map(|s| s.mtu).max();
    if topology == "point-to-point" {
        run(&[
            "ip",
            "link",
            "add",
            "eth0",
            "netns",
            &hosts[0].namespace,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            &hosts[1].namespace,
        ])?;
    } else {
        let sw = format!("{name}-sw");
        run(&["ip", "netns", "add", &sw])?;
        state.switch_namespace = Some(sw.clone());
        save(&state)?;
        // The switch forwards frames and nothing else: no addresses, no IPv6 chatter.
        run(&[
            "ip",
            "netns",
            "exec",
            &sw,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
        ])?;
        if topology == "bridge" {
            run(&["ip", "-n", &sw, "link", "add", "br0", "type", "bridge"])?;
        }
        for (i, h) in hosts.iter().enumerate() {
            let port = format!("p{}", i + 1);
            run(&[
                "ip",
                "link",
                "add",
                "eth0",
                "netns",
                &h.namespace,
                "type",
                "veth",
                "peer",
                "name",
                &port,
                "netns",
                &sw,
            ])?;
            if let Some(m) = max_mtu {
                run(&["ip", "-n", &sw, "link", "set", &port, "mtu", &m.to_string()])?;
            }
            if topology == "bridge" {
                run(&["ip", "-n", &sw, "link", "set", &port, "master", "br0"])?;
            } else {
                run(&["ip", "-n", &sw, "link", "set", &port, "promisc", "on"])?;
            }
            run(&["ip", "-n", &sw, "link", "set", &port, "up"])?;
        }
        if topology == "bridge" {
            if let Some(m) = max_mtu {
                run(&["ip", "-n", &sw, "link", "set", "br0", "mtu", &m.to_string()])?;
            }
            run(&["ip", "-n", &sw, "link", "set", "br0", "up"])?;
        }
    }
    for h in hosts.iter_mut() {
        let ns = h.namespace.clone();
        run(&["ip", "-n", &ns, "link", "set", "eth0", "address", &h.mac])?;
        if let Some(m) = h.link.mtu {
            run(&["ip", "-n", &ns, "link", "set", "eth0", "mtu", &m.to_string()])?;
            h.backends.mtu = Some("ip link".into());
        }
        if !netem && h.link.loss_percent.is_some_and(|p| p > 0.0) {
            // One wire packet per skb, so that loss drops packets, not 64 KiB offload bursts.
            run(&["ip", "-n", &ns, "link", "set", "eth0", "gso_max_segs", "1"])?;
        }
        run(&[
            "ip",
            "-n",
            &ns,
            "addr",
            "add",
            &format!("{}/24", h.address),
            "dev",
            "eth0",
        ])?;
        run(&["ip", "-n", &ns, "link", "set", "eth0", "up"])?;
        shape_egress(h, netem)?;
    }
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
        let pid = start_agent(&state, i)?;
        state.hosts[i].agent_pid = Some(pid);
        save(&state)?;
    }
    Ok(state)
}

fn rand_fill(buf: &mut [u8]) {
    let n = linerate_core::proto::auth::nonce();
    for (b, r) in buf.iter_mut().zip(n.iter()) {
        *b = *r;
    }
}

fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    Ok(())
}

fn save(state: &LabState) -> anyhow::Result<()> {
    let path = state_dir(&state.name).join("state.json");
    std::fs::write(&path, serde_json::to_string_pretty(state)?).with_context(|| format!("writing {}", path.display()))
}

pub fn load(name: &str) -> anyhow::Result<LabState> {
    check_name(name)?;
    let path = state_dir(name).join("state.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("no lab '{name}' (linerate lab up --name {name})"))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not a lab state file", path.display()))
}

/// Rate (tbf) or everything (netem) on a host's egress.
fn shape_egress(h: &mut LabHost, netem: bool) -> anyhow::Result<()> {
    let ns = h.namespace.clone();
    let l = h.link.clone();
    let mtu = f64::from(l.mtu.unwrap_or(1500));
    if netem && (l.needs_relay() || l.loss_percent.is_some() || l.rate_bits_per_second.is_some()) {
        let mut args: Vec<String> = ["tc", "-n", &ns, "qdisc", "add", "dev", "eth0", "root", "netem"]
            .map(String::from)
            .to_vec();
        if let Some(d) = l.delay_us {
            args.extend(["delay".into(), format!("{d}us")]);
            if let Some(j) = l.jitter_us {
                args.push(format!("{j}us"));
            }
        }
        for (key, v) in [
            ("loss", l.loss_percent),
            ("reorder", l.reorder_percent),
            ("duplicate", l.duplicate_percent),
        ] {
            if let Some(p) = v {
                args.extend([key.into(), format!("{p}%")]);
            }
        }
        if let Some(r) = l.rate_bits_per_second {
            args.extend(["rate".into(), format!("{}bit", r as u64)]);
        }
        if let Some(lim) = l.limit_packets {
            args.extend(["limit".into(), lim.to_string()]);
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&a)?;
        let b = &mut h.backends;
        let netem = Some("netem".to_string());
        b.delay = l.delay_us.and(netem.clone());
        b.jitter = l.jitter_us.and(netem.clone());
        b.loss = l.loss_percent.and(netem.clone());
        b.reorder = l.reorder_percent.and(netem.clone());
        b.duplicate = l.duplicate_percent.and(netem.clone());
        b.rate = l.rate_bits_per_second.and(netem);
        return Ok(());
    }
    if let Some(rate) = l.rate_bits_per_second {
        // A bucket of 2 ms at the rate (at least two full frames) keeps the rate exact over any
        // window past a few ms; the queue holds 50 ms unless limit= says how many packets.
        let burst = ((rate / 8.0 * 0.002) as u64).max((2.0 * (mtu + 14.0)) as u64);
        let mut args = vec![
            "tc".to_string(),
            "-n".into(),
            ns,
            "qdisc".into(),
            "add".into(),
            "dev".into(),
            "eth0".into(),
            "root".into(),
            "tbf".into(),
        ];
        args.extend([
            "rate".into(),
            format!("{}bit", rate as u64),
            "burst".into(),
            burst.to_string(),
        ]);
        match l.limit_packets {
            Some(p) => args.extend(["limit".into(), (u64::from(p) * (mtu as u64 + 14)).to_string()]),
            None => args.extend(["latency".into(), "50ms".into()]),
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&a)?;
        h.backends.rate = Some("tbf".into());
    }
    Ok(())
}

/// Random loss of each host's egress, dropped by nftables at every other host's ingress (so the
/// sender sees no error), with a counter per sending host.
fn drop_in_kernel(hosts: &mut [LabHost]) -> anyhow::Result<()> {
    let lossy: Vec<(String, String, f64)> = hosts
        .iter()
        .filter_map(|h| {
            h.link
                .loss_percent
                .filter(|p| *p > 0.0)
                .map(|p| (h.name.clone(), h.mac.clone(), p))
        })
        .collect();
    if lossy.is_empty() {
        return Ok(());
    }
    for h in hosts.iter_mut() {
        let mut rules = String::new();
        for (from, mac, p) in &lossy {
            if *from == h.name {
                continue;
            }
            let threshold = (p / 100.0 * 1_000_000.0).round() as u64;
            rules += &format!(
                "    ether saddr {mac} numgen random mod 1000000 < {threshold} counter drop comment \"loss-from-{from}\"\n"
            );
        }
        let script = format!(
            "table netdev linerate {{\n  chain ingress {{\n    type filter hook ingress device \"eth0\" priority -500;\n{rules}  }}\n}}\n"
        );
        run_stdin(&["ip", "netns", "exec", &h.namespace, "nft", "-f", "-"], &script)?;
    }
    for h in hosts.iter_mut() {
        if h.link.loss_percent.is_some_and(|p| p > 0.0) {
            h.backends.loss = Some("nftables".into());
        }
    }
    Ok(())
}

/// Packets the kernel dropped for `from`'s loss, summed over every receiving host.
pub fn loss_drops(state: &LabState, from: &str) -> u64 {
    let tag = format!("loss-from-{from}");
    state
        .hosts
        .iter()
        .filter(|h| h.name != from)
        .filter_map(|h| {
            run(&[
                "ip",
                "netns",
                "exec",
                &h.namespace,
                "nft",
                "-j",
                "list",
                "table",
                "netdev",
                "linerate",
            ])
            .ok()
        })
        .filter_map(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .flat_map(|v| v["nftables"].as_array().cloned().unwrap_or_default())
        .filter(|item| item["rule"]["comment"] == tag.as_str())
        .filter_map(|item| {
            item["rule"]["expr"]
                .as_array()
                .and_then(|e| e.iter().find_map(|x| x["counter"]["packets"].as_u64()))
        })
        .sum()
}

fn spawn_daemon(args: &[&str], log: &Path) -> anyhow::Result<u32> {
    let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let err = out.try_clone()?;
    let mut cmd = Command::new(args[0]);
    cmd.args(&args[1..]).stdin(Stdio::null()).stdout(out).stderr(err);
    // SAFETY: setsid is async-signal-safe; the daemon leaves our session and terminal.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let child = cmd.spawn().with_context(|| format!("starting {}", args.join(" ")))?;
    Ok(child.id())
}

fn wait_for(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) -> anyhow::Result<()> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if ready() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bail!("{what} did not start within {} s", limit.as_secs())
}

fn start_relay(state: &LabState) -> anyhow::Result<u32> {
    let dir = state_dir(&state.name);
    let config = relay::RelayConfig {
        ports: (1..=state.hosts.len()).map(|i| format!("p{i}")).collect(),
        specs: state.hosts.iter().map(|h| h.link.clone()).collect(),
        stats_path: dir.join("relay-stats.json"),
        queue_bytes: 64 << 20,
    };
    let path = dir.join("relay.json");
    std::fs::write(&path, serde_json::to_string_pretty(&config)?)?;
    let exe = std::env::current_exe()?;
    let sw = state
        .switch_namespace
        .as_deref()
        .expect("a relay lab has a switch namespace");
    let exe = exe.to_str().context("the linerate path is not UTF-8")?;
    let cfg = path.to_str().context("state path is not UTF-8")?;
    let pid = spawn_daemon(
        &["ip", "netns", "exec", sw, exe, "lab", "relay", "--config", cfg],
        &dir.join("relay.log"),
    )?;
    wait_for("the link relay", Duration::from_secs(10), || config.stats_path.exists())?;
    Ok(pid)
}

fn write_hosts_files(state: &LabState) -> anyhow::Result<()> {
    let mut text = String::from("127.0.0.1\tlocalhost\n::1\tlocalhost\n");
    for h in &state.hosts {
        text += &format!("{}\t{}\n", h.address, h.name);
    }
    for h in &state.hosts {
        let dir = Path::new("/etc/netns").join(&h.namespace);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join("hosts"), &text)?;
    }
    Ok(())
}

fn start_agent(state: &LabState, i: usize) -> anyhow::Result<u32> {
    let h = &state.hosts[i];
    let dir = state_dir(&state.name);
    let exe = std::env::current_exe()?;
    let exe = exe.to_str().context("the linerate path is not UTF-8")?;
    let secret = state.secret_file.to_str().context("state path is not UTF-8")?;
    let log = dir.join(format!("agent-{}.log", h.name));
    let port = AGENT_PORT.to_string();
    let pid = spawn_daemon(
        &[
            "ip",
            "netns",
            "exec",
            &h.namespace,
            exe,
            "serve",
            "--bind",
            &h.address,
            "--port",
            &port,
            "--secret-file",
            secret,
            "--max-tests",
            "16",
        ],
        &log,
    )?;
    wait_for(&format!("the agent on {}", h.name), Duration::from_secs(10), || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("listening"))
    })?;
    Ok(pid)
}

fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid as i32, 0) == 0 }
}

fn kill_and_wait(pid: u32) {
    // SAFETY: plain kill(2) on a pid we started.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let start = Instant::now();
    while alive(pid) && start.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(10));
    }
    if alive(pid) {
        // SAFETY: as above.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
}

/// Removes everything a lab made, whether or not its state file survived. Returns what it
/// removed, one line each.
pub fn down(name: &str) -> anyhow::Result<Vec<String>> {
    check_name(name)?;
    need_root_and_ip()?;
    let mut removed = Vec::new();
    if let Ok(state) = load(name) {
        for pid in state.hosts.iter().filter_map(|h| h.agent_pid).chain(state.relay_pid) {
            if alive(pid) {
                kill_and_wait(pid);
                removed.push(format!("process {pid}"));
            }
        }
    }
    for ns in lab_namespaces(name) {
        // Anything still running inside (agents of a crashed lab, commands from lab exec).
        for pid in run(&["ip", "netns", "pids", &ns])
            .unwrap_or_default()
            .split_whitespace()
        {
            if let Ok(pid) = pid.parse::<u32>() {
                kill_and_wait(pid);
                removed.push(format!("process {pid} in {ns}"));
            }
        }
        run(&["ip", "netns", "del", &ns])?;
        removed.push(format!("namespace {ns} (and its veth ends)"));
        let etc = Path::new("/etc/netns").join(&ns);
        if etc.exists() {
            let _ = std::fs::remove_dir_all(&etc);
        }
    }
    let dir = state_dir(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
        removed.push(format!("state {}", dir.display()));
    }
    Ok(removed)
}

/// The relay's counters, when the lab has one.
pub fn relay_stats(state: &LabState) -> Option<Vec<relay::PortStats>> {
    state.relay_pid?;
    let text = std::fs::read_to_string(state_dir(&state.name).join("relay-stats.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Everything `lab status` shows, as one JSON value; also what a result measured in a lab records.
pub fn status_json(state: &LabState) -> serde_json::Value {
    let hosts: Vec<serde_json::Value> = state
        .hosts
        .iter()
        .map(|h| {
            serde_json::json!({
                "name": h.name,
                "namespace": h.namespace,
                "address": h.address,
                "agent": h.agent,
                "agent_running": h.agent_pid.is_some_and(alive),
                "link": h.link,
                "link_text": h.link.describe(),
                "backends": h.backends,
                "loss_drops": if h.link.loss_percent.is_some() && !state.netem { Some(loss_drops(state, &h.name)) } else { None },
            })
        })
        .collect();
    serde_json::json!({
        "name": state.name,
        "topology": state.topology,
        "netem": state.netem,
        "hosts": hosts,
        "relay": state.relay_pid.map(|pid| serde_json::json!({
            "pid": pid,
            "running": alive(pid),
            "ports": relay_stats(state),
        })),
    })
}

pub fn status_text(v: &serde_json::Value) -> String {
    let mut out = format!(
        "lab {}: {} ({}), addresses {SUBNET}.0/24\n",
        v["name"].as_str().unwrap_or("?"),
        v["topology"].as_str().unwrap_or("?"),
        if v["netem"] == true {
            "kernel has netem"
        } else {
            "no netem: tbf, nftables and the linerate relay"
        }
    );
    out += &format!(
        "{:<5} {:<14} {:<19} {:<8} {:<44} {}\n",
        "host", "address", "agent", "running", "egress link", "emulated by"
    );
    for h in v["hosts"].as_array().into_iter().flatten() {
        let backends: Vec<String> = h["backends"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, b)| b.as_str().map(|b| format!("{k}:{b}")))
            .collect();
        out += &format!(
            "{:<5} {:<14} {:<19} {:<8} {:<44} {}\n",
            h["name"].as_str().unwrap_or("?"),
            h["address"].as_str().unwrap_or("?"),
            h["agent"].as_str().unwrap_or("?"),
            if h["agent_running"] == true { "yes" } else { "NO" },
            h["link_text"].as_str().unwrap_or("?"),
            backends.join(" "),
        );
        if let Some(d) = h["loss_drops"].as_u64() {
            out += &format!(
                "      loss: {d} packets from {} dropped by nftables\n",
                h["name"].as_str().unwrap_or("?")
            );
        }
    }
    if let Some(ports) = v["relay"]["ports"].as_array() {
        out += &format!(
            "relay pid {} ({})\n",
            v["relay"]["pid"],
            if v["relay"]["running"] == true {
                "running"
            } else {
                "NOT running"
            }
        );
        for p in ports {
            out += &format!(
                "  {}: in {} frames, out {}, delayed {}, reordered {}, duplicated {}, queue drops {}, send errors {}\n",
                p["port"].as_str().unwrap_or("?"),
                p["frames_in"],
                p["frames_out"],
                p["delayed"],
                p["reordered"],
                p["duplicated"],
                p["queue_drops"],
                p["send_errors"]
            );
        }
    }
    out
}

/// Replaces this process with `cmd` inside a lab host, with the lab's secret in its environment.
pub fn exec(name: &str, host: &str, cmd: &[String]) -> anyhow::Error {
    let state = match load(name) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let Some(h) = state.hosts.iter().find(|h| h.name == host) else {
        let names: Vec<&str> = state.hosts.iter().map(|h| h.name.as_str()).collect();
        return anyhow::anyhow!("lab '{name}' has no host '{host}' (it has {})", names.join(", "));
    };
    let secret = match std::fs::read_to_string(&state.secret_file) {
        Ok(s) => s,
        Err(e) => return anyhow::anyhow!("reading the lab secret {}: {e}", state.secret_file.display()),
    };
    let Some(program) = cmd.first() else {
        return anyhow::anyhow!("lab exec needs a command after --");
    };
    // `linerate` inside the lab is this very binary, wherever it was started from.
    let program = if program == "linerate" {
        std::env::current_exe()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| program.clone())
    } else {
        program.clone()
    };
    let err = Command::new("ip")
        .args(["netns", "exec", &h.namespace, &program])
        .args(&cmd[1..])
        .env("LINERATE_SECRET", secret.trim())
        .env("LINERATE_LAB", name)
        .env("LINERATE_LAB_HOST", host)
        .exec();
    anyhow::Error::new(err).context(format!("running {program} in {}", h.namespace))
}
