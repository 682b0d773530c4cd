//! `linerate http` in the driver: one run is [`run_http`] against the URLs (and the agents on
//! the servers' hosts, when there are some), a sweep varies the user count or finds the optimum,
//! and `--baseline` first measures this client against linerate's own server on this host.

mod baseline;
mod probes;

use super::{Kind, Mode, TestCommand, drive, run_one};
use crate::cli::http::HttpArgs;
use crate::cli::usage::usage;
use crate::finish::print_text;
use anyhow::Context;
use linerate_core::client::{ClientOptions, HttpAgent, HttpTarget, HttpUrl, Sink, http_targets, run_http};
use linerate_core::result::{ErrorBudget, TestResult};
use linerate_core::spec::{HttpSpec, ProbeVia, TestSpec};
use linerate_core::summary::http::apply_max_errors;
use linerate_core::sweep::Sweep;
use linerate_core::sweep::http::{HttpBaseline, HttpPoints, Users};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// An HTTP load: its URLs, the agent beside the server, and the baseline once measured.
pub struct Http {
    /// The URLs as given, as the store keeps them.
    urls: Vec<String>,
    targets: Vec<HttpTarget>,
    /// The agents beside the servers (none: the servers' hosts are not measured).
    agents: Vec<HttpAgent>,
    opts: ClientOptions,
    /// `--baseline`: kept in a sweep's document, its share added to each single run's result.
    baseline: Option<HttpBaseline>,
    /// `--max-errors`: kept in each run's document, whose outcome it judges.
    max_errors: Option<ErrorBudget>,
    /// `--probe http`: what the probes on a connection of their own ask for.
    probe_target: Option<HttpTarget>,
}

/// `linerate http`: one run, repeated runs, or a sweep over user counts with the optimum.
pub fn command(args: &HttpArgs) -> anyhow::Result<ExitCode> {
    if args.common.reach.profile.is_some() && args.agent.is_empty() {
        return Err(usage!("--profile needs --agent: the agent on the server's host that runs the profile").into());
    }
    let urls = args.parsed_urls()?;
    args.cpus.check_here()?;
    let counts = args.user_counts()?;
    let sweeps = args.find_optimum || counts.len() > 1;
    let users = if args.find_optimum {
        Users::FindOptimum
    } else {
        Users::List(counts.clone())
    };
    let mode = Mode::of(
        args.common.repeat.policy()?,
        sweeps.then_some(users),
        "--users with several counts, --find-optimum",
    )?;
    let base = args.spec_for(counts[0])?;
    let mut http = Http {
        urls: args.urls.clone(),
        opts: args.common.reach.options()?,
        targets: http_targets(&urls, args.keepalive)?,
        agents: args.agents(&urls)?,
        baseline: None,
        max_errors: args.max_errors,
        probe_target: probe_target(&base, &urls)?,
    };
    if args.baseline {
        let b = baseline::baseline(&base, &http.targets, |spec, local| {
            // The baseline measures this client's own cost: no probes beside it.
            let spec = HttpSpec {
                probe: None,
                ..spec.clone()
            };
            run_one(&http.on(local), &spec, &http.opts, true)
        })
        .context("--baseline")?;
        // A sweep prints it at the head of its table (its document keeps it).
        if !args.common.output.json && !args.common.output.brief && !sweeps {
            print_text(&linerate_report::sweep::baseline_line(&b))?;
        }
        http.baseline = Some(b);
    }
    drive(TestCommand::new(http, base, mode, args.common.output.clone()))
}

impl Http {
    /// The same load against `local` (the baseline's own server), without an agent.
    fn on(&self, local: &[HttpTarget]) -> Http {
        Http {
            urls: self.urls.clone(),
            targets: local.to_vec(),
            agents: Vec::new(),
            opts: self.opts.clone(),
            baseline: None,
            max_errors: None,
            probe_target: None,
        }
    }
}

/// `--probe http`: the probes' target, a small object (`/bytes/SIZE`, which a linerate server
/// answers) on the first URL's server over the same scheme; None without probes on a
/// connection of their own.
fn probe_target(spec: &HttpSpec, urls: &[HttpUrl]) -> anyhow::Result<Option<HttpTarget>> {
    let (Some(probe), Some(first)) = (&spec.probe, urls.first()) else {
        return Ok(None);
    };
    // The flags take http alone; a spec from elsewhere (a plan) is checked here too.
    if probe.via != ProbeVia::Http {
        return Err(usage!("--probe {} is not a probe http runs (it takes http)", probe.via).into());
    }
    let url = HttpUrl {
        path: format!("/bytes/{}", probe.size_bytes),
        ..first.clone()
    };
    Ok(http_targets(&[url], true)?.pop())
}

impl Kind for Http {
    type Spec = HttpSpec;
    type Points = Users;
    const NAME: &'static str = "http";
    const PER_SECOND: Option<&'static str> = Some("responses");

    fn options(&self) -> &ClientOptions {
        &self.opts
    }

    fn test_spec(spec: &HttpSpec) -> TestSpec {
        TestSpec::Http(spec.clone())
    }

    fn interval_seconds(spec: &HttpSpec) -> f64 {
        spec.timing.interval_seconds
    }

    fn run(
        &self,
        spec: &HttpSpec,
        opts: &ClientOptions,
        sink: &mut dyn Sink,
        interrupt: &AtomicBool,
    ) -> anyhow::Result<TestResult> {
        let mut result = match (&spec.probe, &self.probe_target) {
            (Some(probe), Some(target)) => {
                probes::run_probed(spec, probe, target, &self.targets, &self.agents, opts, sink, interrupt)?
            }
            _ => run_http(spec, &self.targets, &self.agents, opts, sink, interrupt)?,
        };
        // Here, so that every run is judged alike: once, repeated, or a sweep's point.
        apply_max_errors(&mut result, self.max_errors);
        Ok(result)
    }

    fn complete(&self, result: &mut TestResult) {
        if let Some(b) = &self.baseline {
            b.apply(result);
        }
    }

    fn targets(&self) -> Vec<String> {
        self.urls.clone()
    }

    fn against(&self) -> String {
        self.urls.join(" ")
    }

    fn validate(spec: &HttpSpec) -> anyhow::Result<()> {
        Ok(spec.validate()?)
    }

    fn point(spec: &HttpSpec) -> Option<String> {
        Some(format!("http sweep point of {} users", spec.users))
    }

    fn sweep(
        &self,
        base: &HttpSpec,
        users: &Users,
        run: impl FnMut(&HttpSpec) -> anyhow::Result<TestResult>,
        progress: impl FnMut(&Sweep) -> anyhow::Result<()>,
    ) -> anyhow::Result<Sweep> {
        let plan = HttpPoints {
            users: users.clone(),
            baseline: self.baseline,
        };
        linerate_core::sweep::http::sweep(base, &plan, run, progress)
    }
}
