//! linerate: parse -> spec -> run -> render -> exit code; nothing else.

mod campaign;
mod cli;
mod compare;
mod finish;
mod host;
mod live;
mod repeat;
mod report;
mod serve;
mod sources;

use anyhow::Context;
use clap::Parser;
use cli::{Cli, Command};
use finish::{Keep, Produced, finish};
use linerate_core::agent;
use linerate_core::client::HttpTarget;
use linerate_core::client::{ClientOptions, Target, run_tcp};
use linerate_core::result::TestResult;
use linerate_core::spec::{HttpSpec, RrSpec, TcpSpec, UdpSpec};
use linerate_core::sweep::Sweep;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind as K;
            if matches!(e.kind(), K::DisplayHelp | K::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            // Bare `linerate`: the subcommands, and the status of a usage error.
            if e.kind() == K::DisplayHelpOnMissingArgumentOrSubcommand {
                let _ = e.print();
                return ExitCode::from(2);
            }
            // One line naming the problem, not clap's usage block.
            let text = e.render().to_string();
            let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
            let mut first = lines.next().unwrap_or("bad arguments").to_string();
            // "the following required arguments were not provided:" names them on the next line.
            if first.ends_with(':')
                && let Some(next) = lines.next()
            {
                first = format!("{first} {next}");
            }
            // Keep clap's suggestion ("tip: a similar argument exists: '--window'") on the line.
            for tip in text.lines().map(str::trim).filter(|l| l.starts_with("tip:")) {
                first = format!("{first}; {tip}");
            }
            eprintln!("linerate: {} (see --help)", first.trim_start_matches("error: "));
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            if err
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("linerate: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => serve::serve(&args),
        Command::Tcp(args) => {
            let targets = args.hosts.targets()?;
            let opts = args.reach.options()?;
            let output = args.output.clone();
            let json = output.json;
            let repeat = args.repeat.policy()?;
            let sizes = args.sizes()?;
            repeat::refuse_with_sweep(repeat.as_ref(), sizes.as_ref().map(|_| "--sizes"))?;
            let spec = args.into_spec()?;
            if let Some(sizes) = sizes {
                let run = |spec: &TcpSpec| {
                    spec.validate()?;
                    tcp_test(spec, &targets, &opts, true)
                        .with_context(|| format!("sweep point -l {}", spec.buffer_bytes))
                };
                let sweep = linerate_core::sweep::tcp::sweep(&spec, &sizes, run, |s| show_sweep(s, json))?;
                return finish(&Produced::Sweep(sweep), &keep(&output, &targets));
            }
            let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
            let opts = record_lab(&opts);
            if let Some(policy) = repeat {
                let rep = repeat::repeat_test("tcp", &policy, json, |_| {
                    let result = tcp_test(&spec, &targets, &opts, true)
                        .with_context(|| format!("tcp test against {}", names.join(", ")))?;
                    Ok(result)
                })?;
                return finish(&Produced::Repeated(rep), &keep(&output, &targets));
            }
            let result = tcp_test(&spec, &targets, &opts, json)
                .with_context(|| format!("tcp test against {}", names.join(", ")))?;
            finish(&Produced::Test(result), &keep(&output, &targets))
        }
        Command::Udp(args) => {
            let targets = args.hosts.targets()?;
            let opts = args.reach.options()?;
            let output = args.output.clone();
            let json = output.json;
            let sweep = args.sweep()?;
            let repeat = args.repeat.policy()?;
            repeat::refuse_with_sweep(repeat.as_ref(), sweep.as_ref().map(|_| "--sizes, --gaps"))?;
            let spec = args.into_spec()?;
            if let Some(plan) = sweep {
                let run = |spec: &UdpSpec| {
                    spec.validate()?;
                    udp_test(spec, &targets, &opts, true).with_context(|| {
                        format!(
                            "sweep point {} bytes, gap {} us",
                            spec.payload_bytes,
                            spec.gap_ns as f64 / 1e3
                        )
                    })
                };
                let sweep = linerate_core::sweep::udp::sweep(&spec, &plan, run, |s| show_sweep(s, json))?;
                return finish(&Produced::Sweep(sweep), &keep(&output, &targets));
            }
            let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
            let opts = record_lab(&opts);
            if let Some(policy) = repeat {
                let rep = repeat::repeat_test("udp", &policy, json, |_| {
                    let result = udp_test(&spec, &targets, &opts, true)
                        .with_context(|| format!("udp test against {}", names.join(", ")))?;
                    Ok(result)
                })?;
                return finish(&Produced::Repeated(rep), &keep(&output, &targets));
            }
            let result = udp_test(&spec, &targets, &opts, json)
                .with_context(|| format!("udp test against {}", names.join(", ")))?;
            finish(&Produced::Test(result), &keep(&output, &targets))
        }
        Command::Rr(args) => {
            let targets = args.hosts.targets()?;
            let opts = args.reach.options()?;
            let output = args.output.clone();
            let json = output.json;
            let sizes = args.sizes()?;
            let repeat = args.repeat.policy()?;
            repeat::refuse_with_sweep(repeat.as_ref(), sizes.as_ref().map(|_| "--sizes"))?;
            let both = args.sweep == cli::rr::SweepWhat::Both;
            let expect: Vec<f64> = args.expect.iter().map(|r| r.0).collect();
            anyhow::ensure!(expect.iter().all(|b| *b > 0.0), "--expect bandwidths must be above 0");
            let spec = args.into_spec()?;
            if let Some(sizes) = sizes {
                use linerate_core::sweep::{RrVaries, rr};
                let first = targets.first().context("no agent named")?;
                let plan = rr::RrPlan {
                    sizes_bytes: sizes,
                    varies: if both { RrVaries::Both } else { RrVaries::Request },
                    expect_bits_per_second: expect,
                    path: rr::PathToward::read(first.addr.ip()),
                };
                let run = |spec: &RrSpec| {
                    spec.validate()?;
                    rr_test(spec, &targets, &opts, true)
                };
                let sweep = rr::sweep(&spec, &plan, run, |s| show_sweep(s, json))?;
                return finish(&Produced::Sweep(sweep), &keep(&output, &targets));
            }
            let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
            let opts = record_lab(&opts);
            if let Some(policy) = repeat {
                let rep = repeat::repeat_test("rr", &policy, json, |_| {
                    let result = rr_test(&spec, &targets, &opts, true)
                        .with_context(|| format!("rr test against {}", names.join(", ")))?;
                    Ok(result)
                })?;
                return finish(&Produced::Repeated(rep), &keep(&output, &targets));
            }
            let result = rr_test(&spec, &targets, &opts, json)
                .with_context(|| format!("rr test against {}", names.join(", ")))?;
            finish(&Produced::Test(result), &keep(&output, &targets))
        }
        Command::Http(args) => http_command(&args),
        Command::Quick(args) => quick(&args),
        Command::Results(args) => cli::results::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Plan(args) => match args.command {
            cli::plan::PlanCommand::Check { file, quick, commands } => campaign::check(&file, quick, commands),
            cli::plan::PlanCommand::Run {
                file,
                quick,
                resume,
                db,
            } => campaign::run(&file, quick, resume.as_deref(), &db),
            cli::plan::PlanCommand::Show { id, json, db } => campaign::show(&id, json, &db),
        },
        Command::Report(args) => report::report(&args),
        Command::Lab(args) => lab_command(args.command),
        Command::Sys(args) => host::sys(&args),
        Command::Doctor(args) => host::doctor(&args),
        Command::Calc(args) => host::calc(&args),
        Command::Completions(args) => Ok(cli::complete::print_completions(args.shell).map(|()| ExitCode::SUCCESS)?),
        Command::Man => Ok(cli::complete::print_man().map(|()| ExitCode::SUCCESS)?),
    }
}

/// The process's Ctrl-C flag, registered once (sweeps run many tests): the first Ctrl-C (or
/// SIGTERM) stops the run and reports what was measured; a second one while stopping exits now.
fn interrupt_flag() -> anyhow::Result<Arc<AtomicBool>> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    if let Some(f) = FLAG.get() {
        return Ok(Arc::clone(f));
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register_conditional_shutdown(signal_hook::consts::SIGINT, 130, Arc::clone(&interrupt))?;
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupt))?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&interrupt))?;
    Ok(Arc::clone(FLAG.get_or_init(|| interrupt)))
}

/// Inside a lab (`linerate lab exec`), the result records the emulated links.
fn record_lab(opts: &ClientOptions) -> ClientOptions {
    let lab = std::env::var_os("LINERATE_LAB")
        .and_then(|n| n.into_string().ok())
        .and_then(|name| linerate_lab::load(&name).ok())
        .map(|state| linerate_lab::status(&state));
    ClientOptions { lab, ..opts.clone() }
}

/// Runs a TCP test with live lines and Ctrl-C handling.
fn tcp_test(spec: &TcpSpec, targets: &[Target], opts: &ClientOptions, json: bool) -> anyhow::Result<TestResult> {
    let interrupt = interrupt_flag()?;
    let mut live = live::LiveLines::new(json || spec.interval_seconds == 0.0);
    Ok(run_tcp(spec, targets, opts, &mut live, &interrupt)?)
}

/// Runs a UDP test with live lines and Ctrl-C handling.
fn udp_test(
    spec: &linerate_core::spec::UdpSpec,
    targets: &[Target],
    opts: &ClientOptions,
    json: bool,
) -> anyhow::Result<TestResult> {
    let interrupt = interrupt_flag()?;
    let mut live = live::LiveLines::new(json || spec.interval_seconds == 0.0);
    Ok(linerate_core::client::run_udp(
        spec, targets, opts, &mut live, &interrupt,
    )?)
}

/// Runs a request-response test with live lines and Ctrl-C handling.
fn rr_test(
    spec: &linerate_core::spec::RrSpec,
    targets: &[Target],
    opts: &ClientOptions,
    json: bool,
) -> anyhow::Result<TestResult> {
    let interrupt = interrupt_flag()?;
    let mut live = live::LiveLines::new(json || spec.interval_seconds == 0.0).per_second("transactions");
    Ok(linerate_core::client::run_rr(
        spec, targets, opts, &mut live, &interrupt,
    )?)
}

/// Runs an HTTP load with live lines and Ctrl-C handling.
fn http_test(
    spec: &linerate_core::spec::HttpSpec,
    targets: &[HttpTarget],
    agent: Option<linerate_core::client::HttpAgent>,
    opts: &ClientOptions,
    json: bool,
) -> anyhow::Result<TestResult> {
    let interrupt = interrupt_flag()?;
    let mut live = live::LiveLines::new(json || spec.interval_seconds == 0.0).per_second("responses");
    Ok(linerate_core::client::run_http(
        spec, targets, agent, opts, &mut live, &interrupt,
    )?)
}

/// `linerate http`: one run, or a sweep over user counts with the optimum.
fn http_command(args: &cli::http::HttpArgs) -> anyhow::Result<ExitCode> {
    use linerate_core::sweep::http::{HttpPlan, Users, baseline, sweep};
    if args.reach.profile.is_some() && args.agent.is_none() {
        eprintln!("linerate: --profile needs --agent: the agent on the server's host that runs the profile");
        return Ok(ExitCode::from(2));
    }
    let urls = args.parsed_urls()?;
    let counts = args.user_counts()?;
    let repeat = args.repeat.policy()?;
    let sweeps = args.find_optimum || counts.len() > 1;
    repeat::refuse_with_sweep(
        repeat.as_ref(),
        sweeps.then_some("--users with several counts, --find-optimum"),
    )?;
    let base = args.spec_for(counts[0])?;
    let opts = args.reach.options()?;
    let targets = linerate_core::client::http_targets(&urls, args.keepalive)?;
    let baseline = if args.baseline {
        let run = |spec: &HttpSpec, local: &[HttpTarget]| http_test(spec, local, None, &opts, true);
        let b = baseline(&base, &targets, run).context("--baseline")?;
        // A sweep prints it at the head of its table (its document keeps it).
        if !args.output.json && !sweeps {
            print_text(&linerate_report::sweep::baseline_line(&b))?;
        }
        Some(b)
    } else {
        None
    };
    let lab_opts = record_lab(&opts);
    if let Some(policy) = repeat {
        let rep = repeat::repeat_test("http", &policy, args.output.json, |_| {
            let mut result = http_test(&base, &targets, args.agent(&urls)?, &lab_opts, true)
                .with_context(|| format!("http test against {}", args.urls.join(" ")))?;
            if let Some(b) = &baseline {
                b.apply(&mut result);
            }
            Ok(result)
        })?;
        return finish(&Produced::Repeated(rep), &keep_urls(&args.output, &args.urls));
    }
    if !args.find_optimum && counts.len() == 1 {
        let mut result = http_test(&base, &targets, args.agent(&urls)?, &lab_opts, args.output.json)
            .with_context(|| format!("http test against {}", args.urls.join(" ")))?;
        if let Some(b) = &baseline {
            b.apply(&mut result);
        }
        return finish(&Produced::Test(result), &keep_urls(&args.output, &args.urls));
    }
    let plan = HttpPlan {
        users: if args.find_optimum {
            Users::FindOptimum
        } else {
            Users::List(counts)
        },
        baseline,
    };
    let run = |spec: &HttpSpec| {
        spec.validate()?;
        http_test(spec, &targets, args.agent(&urls)?, &opts, true)
            .with_context(|| format!("http sweep point of {} users", spec.users))
    };
    let sweep = sweep(&base, &plan, run, |s| show_sweep(s, args.output.json))?;
    finish(&Produced::Sweep(sweep), &keep_urls(&args.output, &args.urls))
}

/// A running sweep's table as it grows (nothing with `--json`: the document comes at the end).
fn show_sweep(sweep: &Sweep, json: bool) -> anyhow::Result<()> {
    if json {
        return Ok(());
    }
    print_text(&linerate_report::sweep::progress(sweep))
}

/// How a test command's result is kept: its output flags and the agents it ran against.
fn keep<'a>(output: &'a cli::common::OutputArgs, targets: &[Target]) -> Keep<'a> {
    Keep {
        json: output.json,
        store: &output.store,
        targets: targets.iter().map(|t| t.name.clone()).collect(),
        labels: Vec::new(),
    }
}

/// The same for an HTTP load: the URLs it ran against.
fn keep_urls<'a>(output: &'a cli::common::OutputArgs, urls: &[String]) -> Keep<'a> {
    Keep {
        json: output.json,
        store: &output.store,
        targets: urls.to_vec(),
        labels: Vec::new(),
    }
}

fn quick(args: &cli::quick::QuickArgs) -> anyhow::Result<ExitCode> {
    let agent = agent::Agent::bind(agent::AgentConfig {
        max_connections: 64,
        ..agent::AgentConfig::new(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0))
    })?;
    let addr = agent.local_addr();
    std::thread::spawn(move || agent.serve(serve::print_agent_event));
    let mut spec = TcpSpec::new();
    spec.limit = linerate_core::spec::Limit::Seconds(args.time.as_secs_f64());
    spec.streams = args.streams;
    spec.validate()?;
    if !args.output.json {
        println!(
            "linerate quick: {} of TCP over loopback to an agent started on {addr}",
            args.time
        );
    }
    let target = Target {
        name: addr.to_string(),
        addr,
    };
    let targets = [target];
    let result = tcp_test(&spec, &targets, &ClientOptions::default(), args.output.json)?;
    let mut keep = keep(&args.output, &targets);
    // Told apart from a `tcp` run in `linerate results --label quick=yes`.
    keep.labels.push(("quick".to_string(), "yes".to_string()));
    finish(&Produced::Test(result), &keep)
}

fn print_text(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

fn lab_command(cmd: cli::lab::LabCommand) -> anyhow::Result<ExitCode> {
    use cli::lab::LabCommand as L;
    use linerate_lab as lab;
    let show = |record: &lab::LabRecord, json: bool| -> anyhow::Result<()> {
        print_text(&if json {
            format!("{}\n", serde_json::to_string_pretty(record)?)
        } else {
            linerate_report::lab::status_text(record, lab::SUBNET)
        })
    };
    match cmd {
        L::Up {
            name,
            hosts,
            links,
            no_netem,
            profiles,
            json,
        } => {
            let state = lab::up(&lab::UpOptions {
                name: name.name,
                hosts,
                links,
                no_netem,
                profiles,
            })?;
            show(&lab::status(&state), json)?;
        }
        L::Status { name, json } => show(&lab::status(&lab::load(&name.name)?), json)?,
        L::Exec { name, host, command } => return Err(lab::exec(&name.name, &host, &command).into()),
        L::Down { name } => {
            let removed = lab::down(&name.name)?;
            let text = if removed.is_empty() {
                format!("lab '{}': nothing to remove\n", name.name)
            } else {
                removed.iter().map(|r| format!("removed {r}\n")).collect()
            };
            print_text(&text)?;
        }
        L::Relay { config } => {
            let text = std::fs::read_to_string(&config).with_context(|| format!("reading {}", config.display()))?;
            let config: lab::relay::RelayConfig = serde_json::from_str(&text)?;
            let stop = Arc::new(AtomicBool::new(false));
            signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&stop))?;
            signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&stop))?;
            lab::relay::run(&config, &stop).context("link relay")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
