//! The Kubernetes manifests (deploy/kubernetes), checked offline: every file and every
//! `kubectl kustomize` output validates against the API schemas of a pinned version, a planted
//! mistake fails, the ConfigMap's plan passes `plan check`, and `linerate secret new` makes the
//! Secret they mount.

use crate::util::{Agent, linerate_command, on_path, run_bounded, stderr};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// The Kubernetes version the manifests are validated against (kubernetes-validate 1.37.0
/// carries its schemas offline).
const K8S: &str = "1.37.0";
/// The directory of the manifests.
const KUBE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/kubernetes");
/// The agents' headless Service as the plan names it.
const SERVICE: &str = "dns:linerate-agents.linerate.svc.cluster.local";
const LIMIT: Duration = Duration::from_secs(60);

/// `kubernetes-validate` on PATH, else in the virtualenv `.ci/run` makes.
fn validator() -> Option<PathBuf> {
    if on_path("kubernetes-validate") {
        return Some("kubernetes-validate".into());
    }
    let venv = Path::new("/opt/linerate-ci-venv/bin/kubernetes-validate");
    venv.exists().then(|| venv.to_path_buf())
}

/// Prints why the test cannot run here (and fails instead under LINERATE_TEST_NO_SKIP, as
/// `util::can_run` does).
fn skip(reason: &str) {
    assert!(
        std::env::var_os("LINERATE_TEST_NO_SKIP").is_none(),
        "LINERATE_TEST_NO_SKIP is set but this test {reason}"
    );
    eprintln!("skipped: {reason}");
}

fn need_validator() -> Option<PathBuf> {
    let v = validator();
    if v.is_none() {
        skip(
            "needs kubernetes-validate on PATH or in /opt/linerate-ci-venv/bin (pip install kubernetes-validate==1.37.0)",
        );
    }
    v
}

fn need_kubectl() -> bool {
    let ok = on_path("kubectl");
    if !ok {
        skip("needs 'kubectl' on PATH (for `kubectl kustomize`, which works offline)");
    }
    ok
}

/// `kubernetes-validate --strict -k K8S FILES`.
fn validate(tool: &Path, files: &[PathBuf]) -> Output {
    run_bounded(
        Command::new(tool).args(["--strict", "-k", K8S]).args(files),
        Duration::from_secs(60),
    )
}

/// Every YAML file under `dir`, sorted.
fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(yaml_files(&p));
        } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The kustomizations: base and every overlay.
fn kustomizations() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = yaml_files(Path::new(KUBE))
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "kustomization.yaml"))
        .map(|p| p.parent().unwrap().to_path_buf())
        .collect();
    dirs.sort();
    dirs
}

/// `kubectl kustomize DIR`, which must succeed.
fn kustomize(dir: &Path) -> String {
    let out = run_bounded(
        Command::new("kubectl").arg("kustomize").arg(dir),
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        stderr(&out)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Asserts the validator passed `out` with one "passed" line per resource it was given and no
/// resource it could not find a schema for.
fn assert_passed(out: &Output, resources: usize, what: &str) {
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(out));
    assert!(out.status.success(), "{what}: {text}");
    assert!(
        !text.contains("Couldn't find schema") && !text.contains("ERROR"),
        "{what}: {text}"
    );
    assert_eq!(
        text.matches(" passed for resource ").count(),
        resources,
        "{what}: {text}"
    );
}

fn tmp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("kube-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn issue_25_every_manifest_and_every_kustomize_output_validates() {
    let Some(tool) = need_validator() else { return };
    // The files: every one but the kustomizations (which have no API schema; kustomize reads
    // them below) is a whole object of the API.
    let files: Vec<PathBuf> = yaml_files(Path::new(KUBE))
        .into_iter()
        .filter(|p| !p.ends_with("kustomization.yaml"))
        .collect();
    assert!(files.len() >= 5, "{files:?}");
    assert_passed(&validate(&tool, &files), files.len(), "deploy/kubernetes files");

    if !need_kubectl() {
        return;
    }
    let dirs = kustomizations();
    let names: Vec<String> = dirs
        .iter()
        .map(|d| d.strip_prefix(KUBE).unwrap().display().to_string())
        .collect();
    for want in [
        "base",
        "overlays/host-network",
        "overlays/pod-network",
        "overlays/pod-vs-host",
    ] {
        assert!(names.iter().any(|n| n == want), "no kustomization {want}: {names:?}");
    }
    let tmp = tmp_dir("outputs");
    for (dir, name) in dirs.iter().zip(&names) {
        let yaml = kustomize(dir);
        let objects = yaml.matches("\nkind: ").count() + usize::from(yaml.starts_with("kind: "));
        let file = tmp.join(format!("{}.yaml", name.replace('/', "-")));
        std::fs::write(&file, &yaml).unwrap();
        assert_passed(&validate(&tool, &[file]), objects, name);
        // The building blocks (agents/, a second set of them) are whole only inside an overlay.
        if !(name == "base" || name.starts_with("overlays/") && name.matches('/').count() == 1) {
            continue;
        }
        for kind in ["Namespace", "ConfigMap", "Service", "DaemonSet", "Job"] {
            assert!(yaml.contains(&format!("\nkind: {kind}\n")), "{name}: no {kind}");
        }
        // The Job waits to be resumed once every agent is ready (deploy/README.md).
        assert!(
            yaml.contains("\n  suspend: true\n"),
            "{name}: the Job is not created suspended"
        );
        let host = yaml.contains("hostNetwork: true");
        assert_eq!(
            host,
            name.ends_with("host-network") || name.ends_with("pod-vs-host"),
            "{name}"
        );
        // Host network is outside Pod Security's restricted and baseline levels.
        let level = if host { "privileged" } else { "restricted" };
        assert!(
            yaml.contains(&format!("pod-security.kubernetes.io/enforce: {level}\n")),
            "{name}"
        );
        assert_eq!(
            yaml.matches("\nkind: DaemonSet\n").count(),
            if name.ends_with("pod-vs-host") { 2 } else { 1 }
        );
        // The Job's `export` names one stored id per point of the plan (each test one point: no
        // `vary`, no variants), in a database fresh in every pod.
        let plan = plan_in(&yaml);
        assert!(!plan.contains("vary") && !plan.contains("variant"), "{plan}");
        let ids: Vec<String> = (1..=plan.matches("[[test]]").count())
            .map(|i| format!("- \"{i}\"\n"))
            .collect();
        let export = format!("- results\n        - export\n        {}", ids.join("        "));
        assert!(
            yaml.contains(&format!("{export}        - --format\n")),
            "{name}: the Job's export does not name {ids:?}"
        );
    }
}

#[test]
fn issue_25_the_validator_fails_on_an_unknown_field_and_on_a_wrong_type() {
    let Some(tool) = need_validator() else { return };
    let agents = std::fs::read_to_string(Path::new(KUBE).join("agents/agents.yaml")).unwrap();
    let tmp = tmp_dir("planted");
    let plants = [
        // An unknown field (a typo of hostNetwork), where --strict alone refuses it.
        (
            "unknown",
            "      automountServiceAccountToken: false\n",
            "      automountServiceAccountToken: false\n      hostNetwrk: true\n",
            "'hostNetwrk' was unexpected",
        ),
        // A wrong type: a string where the schema wants a boolean.
        (
            "type",
            "readOnlyRootFilesystem: true",
            "readOnlyRootFilesystem: \"yes\"",
            "is not of type 'boolean'",
        ),
    ];
    for (name, from, to, needle) in plants {
        assert!(agents.contains(from), "{name}: nothing to plant into");
        let file = tmp.join(format!("{name}.yaml"));
        std::fs::write(&file, agents.replacen(from, to, 1)).unwrap();
        let out = validate(&tool, &[file]);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(!out.status.success(), "{name}: the planted mistake passed: {text}");
        assert!(text.contains(needle), "{name}: {text}");
    }
}

/// The plan a ConfigMap holds: the block under `plan.toml: |`, its indent taken off.
fn plan_in(yaml: &str) -> String {
    let (_, block) = yaml.split_once("  plan.toml: |\n").expect("a plan.toml key");
    block
        .lines()
        .take_while(|l| l.is_empty() || l.starts_with("    "))
        .map(|l| format!("{}\n", l.get(4..).unwrap_or("")))
        .collect()
}

#[test]
fn issue_25_the_config_maps_plans_check_with_their_service_names_replaced() {
    let files: Vec<PathBuf> = yaml_files(Path::new(KUBE))
        .into_iter()
        .filter(|p| std::fs::read_to_string(p).unwrap().contains("  plan.toml: |\n"))
        .collect();
    assert_eq!(files.len(), 2, "the base's plan and pod-vs-host's: {files:?}");
    let tmp = tmp_dir("plan");
    let hosts = tmp.join("hosts");
    std::fs::write(&hosts, "127.0.0.1\n127.0.0.2\n127.0.0.3\n").unwrap();
    for (n, file) in files.iter().enumerate() {
        let plan = plan_in(&std::fs::read_to_string(file).unwrap());
        let tests = plan.matches("[[test]]").count();
        assert_eq!(plan.matches("pattern = \"mesh\"").count(), tests, "{plan}");
        assert_eq!(plan.matches("different_nodes = true").count(), tests, "{plan}");
        assert!(plan.contains(SERVICE), "{plan}");

        // As shipped: the Services' names resolve only inside a cluster, and `plan check`
        // expands `dns:` names, so here it fails on the first of them and nothing else.
        let shipped = tmp.join(format!("shipped-{n}.toml"));
        std::fs::write(&shipped, &plan).unwrap();
        let out = run_bounded(linerate_command().args(["plan", "check"]).arg(&shipped), LIMIT);
        let err = stderr(&out);
        if out.status.success() {
            skip("the cluster's Service names resolve here: the plans checked as they are");
            return;
        }
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(SERVICE) && err.trim_end().lines().count() == 1, "{err}");

        // The same plan with each `dns:` name replaced by three agents on loopback (`@FILE`,
        // one host a line): everything else in it checks.
        let local_plan: String = plan
            .lines()
            .map(|l| match l.starts_with("hosts = [\"dns:") {
                true => format!("hosts = [\"@{}\"]\n", hosts.display()),
                false => format!("{l}\n"),
            })
            .collect();
        assert!(!local_plan.contains("dns:"), "{local_plan}");
        let local = tmp.join(format!("local-{n}.toml"));
        std::fs::write(&local, local_plan).unwrap();
        for quick in [false, true] {
            let mut cmd = linerate_command();
            cmd.args(["plan", "check"]).arg(&local);
            if quick {
                cmd.arg("--quick");
            }
            let out = run_bounded(&mut cmd, LIMIT);
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{} quick {quick}: {}",
                file.display(),
                stderr(&out)
            );
            assert_eq!(text.matches("mesh of 3 hosts: 6 cells").count(), tests, "{text}");
        }
    }
}

/// `linerate secret new ARGS`, which must succeed; its stdout.
fn secret_new(args: &[&str]) -> String {
    let out = run_bounded(linerate_command().args(["secret", "new"]).args(args), LIMIT);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn issue_25_secret_new_makes_the_secret_the_manifests_mount_and_an_agent_serves_with_it() {
    let bare = secret_new(&[]);
    let bare = bare.trim_end();
    assert!(
        bare.len() == 64 && bare.bytes().all(|b| b.is_ascii_hexdigit()),
        "{bare:?}"
    );
    assert_ne!(bare, secret_new(&[]).trim_end(), "two secrets alike");

    let yaml = secret_new(&["--kubernetes", "linerate-secret"]);
    // What the DaemonSet and the Job mount: the Secret `linerate-secret` in `linerate`, key `secret`.
    assert!(
        yaml.contains("kind: Secret\n") && yaml.contains("  name: linerate-secret\n"),
        "{yaml}"
    );
    assert!(yaml.contains("  namespace: linerate\n"), "{yaml}");
    let file = |f: &str| std::fs::read_to_string(Path::new(KUBE).join(f)).unwrap();
    assert!(file("agents/agents.yaml").contains("secretName: linerate-secret"));
    assert!(file("agents/agents.yaml").contains("- /run/secrets/linerate/secret\n"));
    assert!(file("base/job.yaml").contains("name: linerate-secret\n                  key: secret\n"));
    let secret = yaml
        .split_once("stringData:\n  secret: \"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .expect("the key `secret` in stringData")
        .0
        .to_string();
    assert!(
        secret.len() == 64 && secret.bytes().all(|b| b.is_ascii_hexdigit()),
        "{secret:?}"
    );
    assert_eq!(
        secret_new(&["--kubernetes", "s", "--namespace", "other"])
            .matches("namespace: other\n")
            .count(),
        1
    );

    // The manifest validates.
    let tmp = tmp_dir("secret");
    if let Some(tool) = need_validator() {
        let file = tmp.join("secret.yaml");
        std::fs::write(&file, &yaml).unwrap();
        assert_passed(&validate(&tool, &[file]), 1, "secret new --kubernetes");
    }

    // An agent serves with it as its mounted file, a client proves it from the environment, and
    // a client with another fresh secret is refused.
    let file = tmp.join("secret");
    std::fs::write(&file, &secret).unwrap();
    let agent = Agent::start(&["--secret-file", file.to_str().unwrap()]);
    let client = |s: &str| {
        run_bounded(
            linerate_command()
                .args(["tcp", &agent.addr, "-n", "5", "--json"])
                .env("LINERATE_SECRET", s),
            LIMIT,
        )
    };
    let out = client(&secret);
    assert!(out.status.success(), "with the Secret's value: {}", stderr(&out));
    let out = client(bare);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("wrong secret"), "{}", stderr(&out));
}
