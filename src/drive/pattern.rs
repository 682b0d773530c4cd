//! A pattern over a fleet of agents in the driver (`tcp|udp|rr --pattern ...`): every cell a
//! third-party run, written as one matrix. Every agent's clock is read, `--different-nodes`
//! applied to the layout (`linerate_core::fleet::Layout::keep_different_nodes`), then the
//! controller runs the rounds (`linerate_core::client::run_matrix`) with a line per cell as it
//! ends; the driver prints, stores and gives the exit status as for any test.

use crate::cli::common::Fleet;
use crate::cli::usage::usage;
use crate::finish::print_text;
use linerate_core::client::{ClientOptions, MatrixLayout, cell_figure, read_clocks, run_matrix};
use linerate_core::result::{Cell, CellFigure, Matrix};
use linerate_core::spec::TestSpec;

/// Runs `spec` over the fleet's cells, round by round, into one matrix. `quiet` (`--json`,
/// `--brief`): the lines go to stderr, stdout keeps the document or the headline.
pub(super) fn matrix(fleet: &Fleet, spec: &TestSpec, opts: &ClientOptions, quiet: bool) -> anyhow::Result<Matrix> {
    let pattern = fleet.pattern;
    let mut layout = fleet.layout.clone();
    let targets = crate::cli::resolve_targets(&layout.hosts, fleet.port)?;
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
    let clocks = read_clocks(&targets, opts);
    let mut notes = Vec::new();
    if fleet.different_nodes {
        let nodes: Vec<Option<String>> = clocks
            .iter()
            .map(|c| c.as_ref().ok().and_then(|c| c.node.clone()))
            .collect();
        let left_out = layout.keep_different_nodes(pattern, &nodes);
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
    let plan = MatrixLayout {
        spec,
        pattern,
        hosts: &targets,
        cells: &layout.cells,
        rounds: &layout.rounds,
        skew_bound: fleet.skew_bound,
    };
    let interrupt = crate::interrupt::interrupt_flag()?;
    let rounds = layout.rounds.len();
    let mut progress = |c: &Cell| {
        let _ = say(cell_line(c, rounds, cell_figure(spec)));
    };
    let mut matrix = run_matrix(&plan, &clocks, opts, &interrupt, &mut progress);
    notes.append(&mut matrix.notes);
    matrix.notes = notes;
    Ok(matrix)
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
