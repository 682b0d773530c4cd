//! `linerate tcp|udp|rr --pattern ...` (issue 24): a pattern over a fleet of agents, every
//! cell a third-party run, written as one matrix. The selection is laid out into cells and
//! rounds (`linerate_core::fleet`), every agent's clock read, `--different-nodes` applied,
//! then the controller runs the rounds (`linerate_core::client::run_matrix`) with a line per
//! cell as it ends; `finish` prints, stores and gives the exit status as for any test.

use crate::cli::ConnectArgs;
use crate::cli::common::{HostArgs, OutputArgs};
use crate::cli::usage::{Usage, usage};
use crate::finish::{Keep, Produced, finish, print_text};
use linerate_core::client::{MatrixPlan, read_clocks, run_matrix};
use linerate_core::fleet::{Selection, schedule};
use linerate_core::result::{Cell, CellFigure};
use linerate_core::spec::TestSpec;
use std::process::ExitCode;

/// Runs `spec` over the pattern `hosts` names and finishes it as a matrix document.
pub fn command(
    spec: TestSpec,
    once: bool,
    hosts: &HostArgs,
    reach: &ConnectArgs,
    output: &OutputArgs,
) -> anyhow::Result<ExitCode> {
    let fleet = &hosts.fleet;
    let pattern = fleet.pattern.expect("a pattern was given");
    if !once {
        return Err(usage!(
            "--pattern runs each cell once: --repeat and sweeps (--sizes, --gaps) are not for patterns"
        )
        .into());
    }
    let selection = Selection::expand(pattern, &hosts.hosts, &fleet.from, &fleet.pairs, hosts.port)
        .map_err(|e| Usage::Flag(e.to_string()))?;
    let mut layout = selection.layout().map_err(|e| Usage::Flag(e.to_string()))?;
    let mut opts = reach.options()?;
    if opts.secret.is_none() {
        return Err(usage!(
            "a pattern's tests are third-party tests among agents that share a secret: give --secret-file PATH or set LINERATE_SECRET"
        )
        .into());
    }
    opts.lab = crate::drive::lab_record();
    let targets = crate::cli::resolve_targets(&layout.hosts, hosts.port)?;
    let quiet = output.json || output.brief;
    let say = |line: String| -> anyhow::Result<()> {
        if quiet {
            eprintln!("{line}");
            Ok(())
        } else {
            print_text(&format!("{line}\n"))
        }
    };
    say(format!(
        "linerate {} {pattern}: {} hosts, {} cells in {} round{}; reading every agent's clock",
        spec.kind(),
        layout.hosts.len(),
        layout.cells.len(),
        layout.rounds.len(),
        if layout.rounds.len() == 1 { "" } else { "s" }
    ))?;
    let clocks = read_clocks(&targets, &opts);
    let mut notes = Vec::new();
    if fleet.different_nodes {
        let node = |h: usize| clocks[h].as_ref().ok().and_then(|c| c.node.clone());
        let before = layout.cells.len();
        layout.cells.retain(|&(f, t)| match (node(f), node(t)) {
            (Some(a), Some(b)) => a != b,
            _ => true,
        });
        layout.rounds = schedule(pattern, layout.hosts.len(), &layout.cells);
        let left_out = before - layout.cells.len();
        notes.push(format!(
            "--different-nodes: {left_out} pair(s) on one node left out; {} cells in {} rounds",
            layout.cells.len(),
            layout.rounds.len()
        ));
        say(notes[0].clone())?;
        if layout.cells.is_empty() {
            return Err(usage!("--different-nodes left no pair: every agent says it runs on one node").into());
        }
    }
    let plan = MatrixPlan {
        spec: &spec,
        pattern,
        hosts: &targets,
        cells: &layout.cells,
        rounds: &layout.rounds,
        skew_bound: fleet.skew_bound.0,
    };
    let interrupt = crate::interrupt::interrupt_flag()?;
    let rounds = layout.rounds.len();
    let mut progress = |c: &Cell| {
        let _ = say(cell_line(c, rounds, linerate_core::client::cell_figure(&spec)));
    };
    let mut matrix = run_matrix(&plan, &clocks, &opts, &interrupt, &mut progress);
    notes.append(&mut matrix.notes);
    matrix.notes = notes;
    let keep = Keep {
        json: output.json,
        brief: output.brief,
        store: &output.store,
        targets: layout.hosts.clone(),
        labels: Vec::new(),
    };
    finish(&Produced::Matrix(matrix), &keep)
}

/// One cell as it ends: its round, its pair, its figure or why it failed.
fn cell_line(c: &Cell, rounds: usize, figure: CellFigure) -> String {
    let what = match (&c.error, c.value) {
        (Some(e), _) => format!("failed: {e}"),
        (None, Some(v)) => format!("{}: {v:.3}", figure.label()),
        (None, None) => "no figure".into(),
    };
    format!("round {:>3}/{rounds}  {} -> {}  {what}", c.round + 1, c.from, c.to)
}
