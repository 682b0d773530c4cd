//! The text of hand-built matrix documents, compared with reviewed snapshot files in
//! tests/snapshots/: a mesh of 5 hosts with one failed cell and a slow host, an incast of 4.
//! After an intended change: `UPDATE_SNAPSHOTS=1 cargo test -p linerate-report` rewrites them.

mod common;
use common::check;

use linerate_core::result::{Matrix, Pattern};
use linerate_core::sweep::stub_matrix;
use linerate_report::matrix;

/// A mesh of h1..h5 whose h5 has half the others' link, h1 -> h4 failed.
fn mesh_of_5() -> Matrix {
    let hosts = ["h1", "h2", "h3", "h4", "h5"];
    let mut cells = Vec::new();
    for (i, from) in hosts.iter().enumerate() {
        for (j, to) in hosts.iter().enumerate() {
            if from == to {
                continue;
            }
            let value = if (*from, *to) == ("h1", "h4") {
                Err("h4 unreachable: connection refused")
            } else if *from == "h5" || *to == "h5" {
                Ok(47.0 + (i + j) as f64 * 0.13)
            } else {
                Ok(94.0 + (i * 5 + j) as f64 * 0.07)
            };
            cells.push((*from, *to, value));
        }
    }
    stub_matrix(Pattern::Mesh, &hosts, &cells)
}

/// h2..h5 into h1 at once, h5's flow starved.
fn incast_of_4() -> Matrix {
    let mut m = stub_matrix(
        Pattern::Incast,
        &["h1", "h2", "h3", "h4", "h5"],
        &[
            ("h2", "h1", Ok(30.5)),
            ("h3", "h1", Ok(29.8)),
            ("h4", "h1", Ok(31.2)),
            ("h5", "h1", Ok(3.4)),
        ],
    );
    m.notes.push("h5's flow took 4 % of the sum".into());
    m
}

#[test]
fn issue_24_a_mesh_of_5_with_a_failed_cell() {
    let m = mesh_of_5();
    let text = matrix::text(&m);
    check("matrix_mesh_of_5.txt", &text);
    assert!(
        text.contains("failed: h1 -> h4: h4 unreachable: connection refused"),
        "{text}"
    );
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("h1 "))
        .expect("h1's row")
        .split_whitespace()
        .collect();
    assert_eq!(row[1], "-", "no cell from a host to itself: {row:?}");
    assert_eq!(row[4], "failed", "{row:?}");
    assert!(
        text.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("tcp matrix: partial; cells 20 (1 failed); sum "),
        "{text}"
    );
}

#[test]
fn issue_24_an_incast_of_4_shows_every_flow_s_share_and_jain_s_index() {
    let text = matrix::text(&incast_of_4());
    check("matrix_incast_of_4.txt", &text);
    assert!(text.contains("h5 -> h1 3.6 %"), "{text}");
    assert!(text.contains("Jain's index 0.803 over the flows"), "{text}");
    assert!(text.contains("note: h5's flow took"), "{text}");
}

#[test]
fn issue_24_long_host_names_keep_the_table_s_columns() {
    let long = "linerate-agent-7d9f8c6b5-xk2lp.fleet.svc.cluster.local";
    let other = "linerate-agent-7d9f8c6b5-q8mzt.fleet.svc.cluster.local";
    let m = stub_matrix(
        Pattern::Mesh,
        &[long, other, "h3"],
        &[
            (long, other, Ok(9410.25)),
            (other, long, Ok(12.5)),
            (long, "h3", Ok(1.0)),
            ("h3", long, Err("refused")),
            (other, "h3", Ok(0.5)),
            ("h3", other, Ok(100.0)),
        ],
    );
    let table = matrix::table(&m);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    let width = lines[0].chars().count();
    assert!(
        lines.iter().all(|l| l.chars().count() == width),
        "every line as wide as the head:\n{table}"
    );
    assert!(width < 4 * 22 + 10, "{table}");
    let labels = matrix::host_labels(&[long, other, "h3"]);
    assert!(
        labels[0].contains("xk2lp") && labels[1].contains("q8mzt"),
        "cut names stay apart: {labels:?}"
    );
    assert!(table.contains(&labels[0]) && table.contains(&labels[1]), "{table}");
    assert!(
        labels[..2]
            .iter()
            .all(|l| l.chars().count() == matrix::HOST_WIDTH && l.contains('…')),
        "{labels:?}"
    );
    assert_eq!(labels[2], "h3");
    let apart = matrix::host_labels(&["alpha.example.org.long.name", "beta.example.org.long.name"]);
    assert_eq!(
        apart,
        ["alpha.example.org.l…", "beta.example.org.lo…"],
        "differing early: the start"
    );
    let at_end = matrix::host_labels(&["agent.fleet.example.org:5301", "agent.fleet.example.org:5302"]);
    assert_eq!(
        at_end,
        ["…et.example.org:5301", "…et.example.org:5302"],
        "differing last: the end"
    );
}
