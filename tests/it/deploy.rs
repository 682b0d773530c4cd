//! The container image (Containerfile, deploy/build-image.sh) run for real with podman,
//! the pod manifest (deploy/podman/pod.yaml) played with `podman kube play`, and the systemd unit
//! (deploy/systemd/) checked by `systemd-analyze verify`. Each skips, saying why, where the
//! machine lacks the tool or cannot run containers.

use crate::util::{BIN, Need, can_run, on_path, poll_until, run_bounded};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const REPO: &str = env!("CARGO_MANIFEST_DIR");
/// Any podman command but a build or a client run.
const PODMAN_LIMIT: Duration = Duration::from_secs(60);
/// A throwaway secret: the agents and clients of one test share it.
const SECRET: &str = "issue-25-container-test-secret-0123456789";

const PODMAN_NEEDS: [Need; 3] = [
    Need::Root {
        why: "to run podman's containers and networks (rootless podman needs a per-user setup)",
    },
    Need::Program {
        name: "podman",
        package: "podman",
    },
    Need::Program {
        name: "runc",
        package: "runc",
    },
];

/// The image the podman tests share: its tag, or why its build failed.
static SHARED_IMAGE: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();

/// At the test process's exit: the shared image removed (bounded by podman's own deadline; a
/// wedged podman cannot hold the exit past the suite, whose processes are done).
extern "C" fn remove_shared_image() {
    if let Some(Ok(tag)) = SHARED_IMAGE.get() {
        let _ = run_bounded(Command::new("podman").args(["rmi", "--force", tag]), PODMAN_LIMIT);
    }
}

/// Podman with this test's configuration (runc, descriptor and process limits it may set here:
/// crun refuses the development machines' cgroup layout, and the default limits exceed what
/// runc may set), its names unique to the test, and everything it made removed on drop, even
/// when the test fails.
struct Podman {
    dir: tempfile::TempDir,
    /// A prefix unique to this test run for every name it gives.
    prefix: String,
    image: String,
    /// Commands (podman's arguments) that undo what was made, run last first.
    undo: Vec<Vec<String>>,
}

impl Podman {
    fn new(test: &str) -> Podman {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("containers.conf"),
            "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n[engine]\nruntime = \"runc\"\n",
        )
        .expect("write containers.conf");
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .subsec_nanos();
        let prefix = format!("linerate-it-{test}-{}-{nanos:x}", std::process::id());
        Podman {
            image: format!("localhost/{prefix}:test"),
            dir,
            prefix,
            undo: Vec::new(),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("podman");
        cmd.env("CONTAINERS_CONF", self.dir.path().join("containers.conf"))
            .args(["--runtime", "runc"])
            .args(args);
        cmd
    }

    fn run(&self, args: &[&str], limit: Duration) -> Output {
        run_bounded(&mut self.command(args), limit)
    }

    /// `podman ARGS`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args, PODMAN_LIMIT);
        assert!(out.status.success(), "podman {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn on_drop(&mut self, args: &[&str]) {
        self.undo.push(args.iter().map(|a| a.to_string()).collect());
    }

    /// The image of the test's own binary, built with deploy/build-image.sh once for every
    /// test of this process (each test built its own) and removed when the process
    /// exits. False, after printing why, where this podman cannot run a container of it (the
    /// OCI runtime refuses).
    fn build_image(&mut self) -> bool {
        let built = SHARED_IMAGE.get_or_init(|| {
            let tag = format!("localhost/linerate-it-shared-{}:test", std::process::id());
            let out = run_bounded(
                Command::new(Path::new(REPO).join("deploy/build-image.sh"))
                    .args(["--binary", BIN, "--tag", &tag])
                    .env("CONTAINERS_CONF", self.dir.path().join("containers.conf")),
                Duration::from_secs(240),
            );
            // Removed at exit whatever the build did: a half-made image goes too.
            // SAFETY: registers a plain function with no state of its own beside the OnceLock.
            unsafe { libc::atexit(remove_shared_image) };
            if out.status.success() { Ok(tag) } else { Err(text(&out)) }
        });
        self.image = match built {
            Ok(tag) => tag.clone(),
            Err(e) => panic!("deploy/build-image.sh: {e}"),
        };
        // Exit status 125 is podman's own failure (the runtime could not start the container);
        // anything else is the image's.
        let out = self.run(&["run", "--rm", &self.image, "--version"], PODMAN_LIMIT);
        if out.status.code() == Some(125) {
            return skip(&format!("podman cannot run a container here: {}", text(&out)));
        }
        assert!(out.status.success(), "linerate --version in the image: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("linerate "),
            "{}",
            text(&out)
        );
        true
    }

    /// The image just built is the size deploy/image.md gives for an image of a
    /// debug binary, within 5 %, and what it adds to the binary (glibc, libgcc_s, /etc) is what
    /// the page gives for the release image beside its binary, within 5 %.
    fn check_size_against_the_docs(&self) {
        let bytes: f64 = self
            .ok(&["image", "inspect", "--format", "{{.Size}}", &self.image])
            .parse()
            .expect("the image's size in bytes");
        let binary = std::fs::metadata(BIN).expect("the binary").len() as f64;
        let page = std::fs::read_to_string(Path::new(REPO).join("deploy/image.md")).expect("deploy/image.md");
        let figure = |after: &str| -> f64 {
            let at = page
                .find(after)
                .unwrap_or_else(|| panic!("deploy/image.md has no {after:?}"))
                + after.len();
            let number: String = page[at..]
                .trim_start_matches(['*', ' '])
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            number
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("no figure after {after:?} in deploy/image.md"))
                * 1e6
        };
        let (debug_image, release_image, release_binary) = (
            figure("The image of a debug binary (what the tests build): "),
            figure("The release image: **"),
            figure("its release binary: "),
        );
        let within = |got: f64, documented: f64, what: &str| {
            let off = (got - documented).abs() / documented * 100.0;
            assert!(
                off <= 5.0,
                "{what}: built {:.1} MB, deploy/image.md says {:.1} MB ({off:.1} % apart, at most 5 %)",
                got / 1e6,
                documented / 1e6
            );
        };
        within(bytes, debug_image, "the image of the debug binary");
        within(
            bytes - binary,
            release_image - release_binary,
            "the image beside its binary",
        );
    }

    /// Starts an agent container named NAME on NETWORK, the secret from the environment, and
    /// waits for it to listen; its address on the network.
    fn agent(&mut self, name: &str, network: &str) -> String {
        self.on_drop(&["rm", "--force", "--time", "0", name]);
        let env = format!("LINERATE_SECRET={SECRET}");
        self.ok(&[
            "run",
            "--detach",
            "--name",
            name,
            "--network",
            network,
            "--env",
            &env,
            &self.image,
        ]);
        poll_until(Duration::from_secs(30), "the agent container to listen", || {
            let out = self.run(&["logs", name], PODMAN_LIMIT);
            text(&out).contains("listening on [::]:5301")
        });
        self.ok(&[
            "inspect",
            "--format",
            "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
            name,
        ])
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        for args in self.undo.iter().rev() {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut cmd = self.command(&args);
            cmd.stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            // Bounded: a wedged podman must not hang the suite; what is left is named below.
            if let Ok(mut child) = cmd.spawn() {
                let until = std::time::Instant::now() + PODMAN_LIMIT;
                while child.try_wait().ok().flatten().is_none() {
                    if std::time::Instant::now() > until {
                        let _ = child.kill();
                        let _ = child.wait();
                        eprintln!("cleanup timed out: podman {args:?}");
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }
}

/// Prints `skipped: REASON` and returns false, as [`can_run`] does for a need it can name
/// beforehand; with LINERATE_TEST_NO_SKIP set the test fails instead.
fn skip(reason: &str) -> bool {
    assert!(
        std::env::var_os("LINERATE_TEST_NO_SKIP").is_none(),
        "LINERATE_TEST_NO_SKIP is set but this test cannot run: {reason}"
    );
    eprintln!("skipped: {reason}");
    false
}

fn text(out: &Output) -> String {
    format!(
        "{}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn document(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

fn received_bytes(v: &Value) -> u64 {
    v.pointer("/summary/received/bytes")
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no /summary/received/bytes in {v}"))
}

#[test]
fn issue_25_image_runs_agents_and_clients_across_a_podman_network_by_name() {
    if !can_run(&PODMAN_NEEDS) {
        return;
    }
    let mut podman = Podman::new("net");
    if !podman.build_image() {
        return;
    }
    podman.check_size_against_the_docs();
    let network = format!("{}-net", podman.prefix);
    podman.on_drop(&["network", "rm", "--force", &network]);
    podman.ok(&["network", "create", &network]);
    let (a, b) = (format!("{}-a", podman.prefix), format!("{}-b", podman.prefix));
    let ip_a = podman.agent(&a, &network);
    let ip_b = podman.agent(&b, &network);
    let hostname_a = podman.ok(&["inspect", "--format", "{{.Config.Hostname}}", &a]);
    // Names resolve inside the client's container through /etc/hosts (nsswitch.conf's `files`):
    // `agents` names both agents, as a headless Service's name does; and through DNS (`dns`)
    // from a server on the network's gateway, given to the container as its resolver.
    let gateway = podman.ok(&[
        "network",
        "inspect",
        "--format",
        "{{range .Subnets}}{{.Gateway}}{{end}}",
        &network,
    ]);
    let by_dns = format!("{a}.linerate.test");
    let _dns = DnsServer::start(
        gateway.parse().expect("gateway address"),
        &by_dns,
        ip_a.parse().expect("agent address"),
    );
    let client = |args: &[&str]| -> Value {
        let secret = format!("LINERATE_SECRET={SECRET}");
        let (host_a, both_a, both_b) = (
            format!("{a}:{ip_a}"),
            format!("{}-agents:{ip_a}", podman.prefix),
            format!("{}-agents:{ip_b}", podman.prefix),
        );
        let mut full = vec![
            "run",
            "--rm",
            "--network",
            &network,
            "--dns",
            &gateway,
            "--env",
            &secret,
            "--add-host",
            &host_a,
            "--add-host",
            &both_a,
            "--add-host",
            &both_b,
            &podman.image,
        ];
        full.extend_from_slice(args);
        let out = podman.run(&full, Duration::from_secs(90));
        assert!(out.status.success(), "client container {args:?}: {}", text(&out));
        document(&String::from_utf8_lossy(&out.stdout))
    };

    // TCP by both names, and UDP (its data on ephemeral ports) by one: no capability for either.
    for (kind, name) in [("tcp", &a), ("tcp", &by_dns), ("udp", &a)] {
        let one = client(&[kind, name, "-t", "1", "--json", "--no-store"]);
        assert!(received_bytes(&one) > 0, "{one}");
        assert_eq!(one["partial"], false, "{one}");
        let agent = &one["hosts"][name.as_str()];
        assert_eq!(agent["role"], "agent", "{one}");
        assert_eq!(agent["hostname"], hostname_a.as_str(), "agent a answered {name}: {one}");
        assert_ne!(
            one["hosts"]["client"]["hostname"], agent["hostname"],
            "two containers: {one}"
        );
    }

    let dns = format!("dns:{}-agents", podman.prefix);
    let mesh = client(&["tcp", "--pattern", "mesh", &dns, "-t", "1", "--json", "--no-store"]);
    let hosts: Vec<&str> = mesh["hosts"]
        .as_array()
        .expect("hosts")
        .iter()
        .map(|h| h["address"].as_str().expect("address"))
        .collect();
    let mut both = [format!("{ip_a}:5301"), format!("{ip_b}:5301")];
    both.sort_by_key(|a| a.parse::<std::net::SocketAddr>().expect("address"));
    assert_eq!(hosts, both, "{mesh}");
    assert_eq!(mesh["failed"].as_array().map(Vec::len), Some(0), "{mesh}");
    let cells = mesh["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 2, "{mesh}");
    for cell in cells {
        assert!(received_bytes(&cell["result"]) > 0, "{cell}");
    }
}

#[test]
fn issue_25_kube_play_runs_the_pod_manifest_and_its_client_logs_a_result() {
    let mut needs = PODMAN_NEEDS.to_vec();
    // Podman builds the pod's infra (pause) image locally around catatonit.
    needs.push(Need::Program {
        name: "catatonit",
        package: "catatonit",
    });
    if !can_run(&needs) {
        return;
    }
    let mut podman = Podman::new("pod");
    if !podman.build_image() {
        return;
    }
    // The manifest as shipped, with this test's image, pod and secret names.
    let (pod, secret) = (format!("{}-pod", podman.prefix), format!("{}-secret", podman.prefix));
    let manifest = std::fs::read_to_string(Path::new(REPO).join("deploy/podman/pod.yaml")).expect("pod.yaml");
    for needle in [
        "image: localhost/linerate:latest",
        "name: linerate-pod\n",
        "secretName: linerate\n",
    ] {
        assert!(manifest.contains(needle), "deploy/podman/pod.yaml has {needle:?}");
    }
    let manifest = manifest
        .replace("image: localhost/linerate:latest", &format!("image: {}", podman.image))
        .replace("name: linerate-pod\n", &format!("name: {pod}\n"))
        .replace("secretName: linerate\n", &format!("secretName: {secret}\n"));
    let pod_yaml: PathBuf = podman.dir.path().join("pod.yaml");
    std::fs::write(&pod_yaml, manifest).expect("write pod.yaml");
    // The secret as a Kubernetes Secret: podman 4.3 mounts a secret volume from no other kind.
    let secret_yaml = podman.dir.path().join("secret.yaml");
    std::fs::write(
        &secret_yaml,
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {secret}\ndata:\n  secret: {}\n",
            base64(SECRET.as_bytes())
        ),
    )
    .expect("write secret.yaml");

    podman.on_drop(&["secret", "rm", &secret]);
    podman.ok(&["kube", "play", secret_yaml.to_str().expect("utf-8")]);
    podman.on_drop(&["pod", "rm", "--force", "--time", "0", &pod]);
    podman.ok(&["kube", "play", pod_yaml.to_str().expect("utf-8")]);

    let client = format!("{pod}-client");
    poll_until(Duration::from_secs(60), "the pod's client to finish", || {
        podman.ok(&["inspect", "--format", "{{.State.Status}}", &client]) == "exited"
    });
    assert_eq!(podman.ok(&["inspect", "--format", "{{.State.ExitCode}}", &client]), "0");
    // Its stdout holds the one document of its run (a failed try, before the agent listened,
    // prints nothing there).
    let logs = podman.run(&["logs", &client], PODMAN_LIMIT);
    assert!(logs.status.success(), "{}", text(&logs));
    let v = document(&String::from_utf8_lossy(&logs.stdout));
    assert!(received_bytes(&v) > 0, "{v}");
    assert_eq!(v["hosts"]["127.0.0.1"]["role"], "agent", "{v}");
    let agent_log = podman.run(&["logs", &format!("{pod}-agent")], PODMAN_LIMIT);
    assert!(
        text(&agent_log).contains("(secret required)"),
        "the agent read the mounted secret: {}",
        text(&agent_log)
    );
}

/// A DNS server on `ip`, port 53, for one name: an A query for `name` gets `answer`, any other
/// question about `name` no record, any other name NXDOMAIN. Stopped on drop.
struct DnsServer {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl DnsServer {
    fn start(ip: std::net::IpAddr, name: &str, answer: std::net::Ipv4Addr) -> DnsServer {
        let socket = std::net::UdpSocket::bind((ip, 53)).unwrap_or_else(|e| panic!("bind {ip} port 53: {e}"));
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (name, stopped) = (name.to_string(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok((n, from)) = socket.recv_from(&mut buf) else {
                    continue;
                };
                if let Some(reply) = dns_reply(&buf[..n], &name, answer) {
                    let _ = socket.send_to(&reply, from);
                }
            }
        });
        DnsServer {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The answer to one DNS query (RFC 1035 4.1), None when it is not one.
fn dns_reply(query: &[u8], name: &str, answer: std::net::Ipv4Addr) -> Option<Vec<u8>> {
    // The question's name: length-prefixed labels from byte 12 to a zero, then QTYPE and QCLASS.
    let mut labels = Vec::new();
    let mut at = 12;
    while *query.get(at)? != 0 {
        let len = usize::from(query[at]);
        labels.push(std::str::from_utf8(query.get(at + 1..at + 1 + len)?).ok()?);
        at += 1 + len;
    }
    let question = query.get(12..at + 5)?;
    let ours = labels.join(".").eq_ignore_ascii_case(name);
    let a_record = ours && query[at + 1..at + 3] == [0, 1];
    let mut reply = query[..2].to_vec(); // the id
    // QR, RD, RA; RCODE 0, or 3 (NXDOMAIN) for another name. One question, 0 or 1 answer.
    reply.extend_from_slice(&[
        0x81,
        if ours { 0x80 } else { 0x83 },
        0,
        1,
        0,
        u8::from(a_record),
        0,
        0,
        0,
        0,
    ]);
    reply.extend_from_slice(question);
    if a_record {
        // The name by pointer to the question's, type A, class IN, TTL 60 s, 4 bytes.
        reply.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]);
        reply.extend_from_slice(&answer.octets());
    }
    Some(reply)
}

/// Standard base64 with padding (a Secret's `data`).
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `systemd-analyze verify` of `unit` as deploy/systemd/README.md runs it, with the man pages
/// its install step writes (`linerate man --dir`) on MANPATH: verify looks up the unit's
/// `Documentation=man:` page (it failed where they were not installed). Ok, or
/// the problems it printed. It exits 0 on an unknown key or a value it cannot parse (it ignores
/// them, as systemd would), so any line naming the unit file is a problem too.
fn verify_unit(unit: &Path, manpath: &Path) -> Result<(), String> {
    let out = run_bounded(
        Command::new("systemd-analyze")
            .arg("verify")
            .arg(unit)
            .env("MANPATH", manpath),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let file = unit.to_str().expect("utf-8");
    let problems: Vec<&str> = stderr.lines().filter(|l| l.contains(file)).collect();
    if out.status.success() && problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}: {stderr}", out.status))
    }
}

#[test]
fn issue_25_systemd_unit_passes_verify_and_a_planted_mistake_fails_it() {
    if !can_run(&[Need::Program {
        name: "systemd-analyze",
        package: "systemd",
    }]) {
        return;
    }
    let shipped = std::fs::read_to_string(Path::new(REPO).join("deploy/systemd/linerate-agent.service"))
        .expect("deploy/systemd/linerate-agent.service");
    // verify may check that ExecStart's program exists (systemd versions differ): point it at
    // this test's binary.
    assert!(
        shipped.contains("ExecStart=/usr/local/bin/linerate serve "),
        "{shipped}"
    );
    let unit = shipped.replace("/usr/local/bin/linerate", BIN);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("linerate-agent.service");
    std::fs::write(&path, &unit).expect("write unit");
    // The README's install step: the pages the unit's Documentation= names.
    let manpath = dir.path().join("man");
    let man1 = manpath.join("man1");
    let out = run_bounded(
        Command::new(BIN).args(["man", "--dir"]).arg(&man1),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "linerate man --dir: {}", text(&out));
    if on_path("man") {
        // Without them, verify fails on that line, as the README says.
        let bare = dir.path().join("no-man");
        std::fs::create_dir(&bare).expect("mkdir");
        let without = verify_unit(&path, &bare);
        assert!(
            without.as_ref().is_err_and(|e| e.contains("linerate-serve")),
            "verify without the man pages: {without:?}"
        );
    }
    verify_unit(&path, &manpath).expect("the shipped unit verifies clean");

    for directive in [
        "DynamicUser=yes",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "CapabilityBoundingSet=\n",
        "RestrictAddressFamilies=AF_INET AF_INET6 AF_NETLINK AF_UNIX\n",
        "LoadCredential=secret:/etc/linerate/secret",
        "--secret-file ${CREDENTIALS_DIRECTORY}/secret",
    ] {
        assert!(unit.contains(directive), "the unit has {directive:?}");
    }

    for (mistake, planted) in [
        (
            "an unknown directive",
            unit.replace("PrivateTmp=yes", "PrivateTmp=yes\nPrivateNetwrok=yes"),
        ),
        (
            "a value systemd cannot parse",
            unit.replace("ProtectSystem=strict", "ProtectSystem=strictest"),
        ),
    ] {
        std::fs::write(&path, planted).expect("write unit");
        assert!(verify_unit(&path, &manpath).is_err(), "verify should fail on {mistake}");
    }
}
