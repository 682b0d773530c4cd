use super::*;
use std::collections::BTreeSet;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn select(pattern: Pattern, hosts: &[&str], from: &[&str]) -> Selection {
    Selection {
        pattern,
        hosts: names(hosts),
        from: names(from),
        pairs: Vec::new(),
    }
}

/// Every cell in exactly one round; in a one-at-a-time pattern no host twice in a round.
fn assert_valid(layout: &Layout, one_at_a_time: bool) {
    let mut seen = vec![0; layout.cells.len()];
    for round in &layout.rounds {
        assert!(!round.is_empty(), "an empty round");
        let mut busy = BTreeSet::new();
        for &c in round {
            seen[c] += 1;
            let (f, t) = layout.cells[c];
            if one_at_a_time {
                assert!(busy.insert(f), "host {f} twice in round {round:?}");
                assert!(busy.insert(t), "host {t} twice in round {round:?}");
            }
        }
    }
    assert!(seen.iter().all(|&n| n == 1), "cells not once each: {seen:?}");
}

#[test]
fn issue_24_mesh_rounds_are_a_round_robin_tournament() {
    for n in 2..=16usize {
        let hosts: Vec<String> = (0..n).map(|i| format!("h{i}")).collect();
        let layout = Selection {
            pattern: Pattern::Mesh,
            hosts: hosts.clone(),
            from: Vec::new(),
            pairs: Vec::new(),
        }
        .layout()
        .unwrap();
        assert_eq!(layout.hosts, hosts);
        assert_eq!(layout.cells.len(), n * (n - 1), "n = {n}");
        let ordered: BTreeSet<(usize, usize)> = layout.cells.iter().copied().collect();
        assert_eq!(ordered.len(), n * (n - 1), "every ordered pair once, n = {n}");
        assert!(ordered.iter().all(|(a, b)| a != b));
        let want = if n % 2 == 0 { 2 * (n - 1) } else { 2 * n };
        assert_eq!(layout.rounds.len(), want, "rounds for n = {n}");
        assert_valid(&layout, true);
    }
    let five = select(Pattern::Mesh, &["a", "b", "c", "d", "e"], &[]).layout().unwrap();
    assert_eq!((five.cells.len(), five.rounds.len()), (20, 10));
    let sixteen: Vec<String> = (0..16).map(|i| format!("h{i}")).collect();
    let refs: Vec<&str> = sixteen.iter().map(String::as_str).collect();
    let l = select(Pattern::Mesh, &refs, &[]).layout().unwrap();
    assert_eq!((l.cells.len(), l.rounds.len()), (240, 30));
}

#[test]
fn issue_24_a_filtered_mesh_still_has_no_host_twice_in_a_round() {
    let full = select(Pattern::Mesh, &["a", "b", "c", "d", "e", "f"], &[])
        .layout()
        .unwrap();
    // Leave out every cell between a and b or c and d (as --different-nodes would).
    let cells: Vec<(usize, usize)> = full
        .cells
        .iter()
        .copied()
        .filter(|&(f, t)| !matches!((f.min(t), f.max(t)), (0, 1) | (2, 3)))
        .collect();
    let rounds = schedule(Pattern::Mesh, 6, &cells);
    assert_valid(
        &Layout {
            hosts: full.hosts.clone(),
            cells: cells.clone(),
            rounds: rounds.clone(),
        },
        true,
    );
    assert!(rounds.len() <= 10, "{} rounds", rounds.len());
    // A cell list out of the tournament's order and with a repeat is still placed validly.
    let odd = vec![(0, 1), (1, 0), (0, 1), (2, 0)];
    let rounds = schedule(Pattern::Mesh, 3, &odd);
    assert_valid(
        &Layout {
            hosts: names(&["a", "b", "c"]),
            cells: odd,
            rounds,
        },
        true,
    );
}

#[test]
fn issue_24_disjoint_is_a_latin_square() {
    let l = select(Pattern::Disjoint, &["b1", "b2", "b3", "b4"], &["a1", "a2", "a3"])
        .layout()
        .unwrap();
    assert_eq!(l.hosts, names(&["a1", "a2", "a3", "b1", "b2", "b3", "b4"]));
    assert_eq!(l.cells.len(), 12);
    assert_eq!(l.rounds.len(), 4);
    assert_valid(&l, true);
    let wide = select(Pattern::Disjoint, &["b1", "b2"], &["a1", "a2", "a3", "a4", "a5"])
        .layout()
        .unwrap();
    assert_eq!((wide.cells.len(), wide.rounds.len()), (10, 5));
    assert_valid(&wide, true);
}

#[test]
fn issue_24_incast_and_outcast_run_in_one_round() {
    let l = select(Pattern::Incast, &["r"], &["s1", "s2", "s3", "s4"])
        .layout()
        .unwrap();
    assert_eq!(l.hosts, names(&["s1", "s2", "s3", "s4", "r"]));
    assert_eq!(l.cells, vec![(0, 4), (1, 4), (2, 4), (3, 4)]);
    assert_eq!(l.rounds, vec![vec![0, 1, 2, 3]]);
    let l = select(Pattern::Outcast, &["r1", "r2", "r3"], &["s"]).layout().unwrap();
    assert_eq!(l.cells, vec![(0, 1), (0, 2), (0, 3)]);
    assert_eq!(l.rounds, vec![vec![0, 1, 2]]);
}

#[test]
fn issue_24_pairs_run_together_when_disjoint() {
    let pairs = [("a", "b"), ("c", "d"), ("b", "c"), ("e", "f"), ("b", "a"), ("d", "a")];
    let sel = Selection {
        pattern: Pattern::Pairs,
        hosts: Vec::new(),
        from: Vec::new(),
        pairs: pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
    };
    let l = sel.layout().unwrap();
    assert_eq!(l.hosts, names(&["a", "c", "b", "e", "d", "f"]));
    assert_eq!(l.cells.len(), 6);
    assert_valid(&l, true);
    // a-b, c-d and e-f share no host: they run in the first round.
    assert_eq!(l.rounds[0], vec![0, 1, 3]);
    assert_eq!(l.rounds.len(), 3);
}

#[test]
fn issue_24_bad_selections_name_what_is_wrong() {
    let err = |s: Selection| s.layout().unwrap_err().to_string();
    assert_eq!(err(select(Pattern::Mesh, &["a"], &[])), "mesh needs at least 2 hosts");
    assert!(err(select(Pattern::Mesh, &["a", "b"], &["c"])).starts_with("mesh takes no from"));
    assert_eq!(err(select(Pattern::Mesh, &["a", "b", "a"], &[])), "'a' is named twice");
    assert!(err(select(Pattern::Disjoint, &["a"], &[])).starts_with("disjoint needs senders"));
    assert!(err(select(Pattern::Disjoint, &["a", "b"], &["c", "b"])).starts_with("'b' is both a sender"));
    assert!(err(select(Pattern::Incast, &["a", "b"], &["c"])).contains("exactly one receiver"));
    assert!(err(select(Pattern::Incast, &["a"], &[])).starts_with("incast needs"));
    assert_eq!(
        err(select(Pattern::Incast, &["a"], &["b", "a"])),
        "'a' is paired with itself"
    );
    assert!(err(select(Pattern::Outcast, &["a"], &["b", "c"])).contains("exactly one sender"));
    let pairs = |p: &[(&str, &str)]| Selection {
        pattern: Pattern::Pairs,
        hosts: Vec::new(),
        from: Vec::new(),
        pairs: p.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
    };
    assert_eq!(err(pairs(&[])), "pairs needs at least one pair");
    assert_eq!(err(pairs(&[("a", "a")])), "'a' is paired with itself");
    assert_eq!(err(pairs(&[("a", "b"), ("a", "b")])), "the pair a,b is named twice");
    let mut with_pairs = select(Pattern::Mesh, &["a", "b"], &[]);
    with_pairs.pairs = vec![("a".into(), "b".into())];
    assert_eq!(err(with_pairs), "--pair is for --pattern pairs");
    assert_eq!(parse_pair("a, b"), Ok(("a".into(), "b".into())));
    assert_eq!(
        parse_pair("a,b,c").unwrap_err().to_string(),
        "'a,b,c' is not a pair FROM,TO"
    );
    for e in [
        err(select(Pattern::Disjoint, &["a"], &[])),
        err(select(Pattern::Outcast, &[], &["a"])),
    ] {
        assert!(!e.contains('\n'), "one line: {e}");
    }
}

#[test]
fn issue_24_dns_names_expand_to_every_address() {
    assert_eq!(expand_target("h2", 5301).unwrap(), names(&["h2"]));
    let got = expand_target("dns:localhost", 5301).unwrap();
    assert!(got.contains(&"127.0.0.1:5301".to_string()), "{got:?}");
    assert!(
        got.iter().all(|a| a == "127.0.0.1:5301" || a == "[::1]:5301"),
        "{got:?}"
    );
    let mut sorted = got.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), got.len(), "no address twice: {got:?}");
    assert_eq!(expand_target("dns:localhost:7000", 5301).unwrap()[0], "127.0.0.1:7000");
    assert_eq!(expand_target("dns:127.0.0.1", 9).unwrap(), names(&["127.0.0.1:9"]));
    assert_eq!(expand_target("dns:[::1]:8", 9).unwrap(), names(&["[::1]:8"]));
    assert!(matches!(
        expand_target("dns:no-such-host.invalid", 5301),
        Err(FleetError::Resolve { .. } | FleetError::NoAddress(_))
    ));
    assert!(matches!(
        expand_target("dns:localhost:http", 1),
        Err(FleetError::BadPort(_))
    ));
}

#[test]
fn issue_24_host_files_skip_comments_and_name_bad_lines() {
    let dir = std::env::temp_dir().join(format!("linerate-fleet-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("hosts.txt");
    std::fs::write(&file, "# the fleet\nh1\n\n  h2  # the slow one\ndns:127.0.0.1:7\n").unwrap();
    let at = format!("@{}", file.display());
    assert_eq!(expand_target(&at, 5301).unwrap(), names(&["h1", "h2", "127.0.0.1:7"]));
    let all = expand_all(&[at.clone(), "h9".into()], 5301).unwrap();
    assert_eq!(all, names(&["h1", "h2", "127.0.0.1:7", "h9"]));
    let sel = Selection::expand(Pattern::Mesh, &[at], &[], &[], 5301).unwrap();
    assert_eq!(sel.layout().unwrap().rounds.len(), 6);

    std::fs::write(&file, "h1\ndns:localhost:nope\n").unwrap();
    let e = expand_target(&format!("@{}", file.display()), 5301)
        .unwrap_err()
        .to_string();
    assert!(e.contains("hosts.txt, line 2:"), "{e}");
    std::fs::write(&file, "# nobody\n\n").unwrap();
    let e = expand_target(&format!("@{}", file.display()), 5301)
        .unwrap_err()
        .to_string();
    assert!(e.ends_with("names no host"), "{e}");
    let e = expand_target(&format!("@{}", dir.join("missing").display()), 5301)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("host file ") && e.contains("missing"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn issue_24_planned_time_counts_a_setup_allowance_per_round() {
    assert_eq!(planned_seconds(10, 6.0), 70.0);
    assert_eq!(planned_seconds(0, 6.0), 0.0);
}

#[test]
fn issue_39_host_files_target_lists_and_fleets_are_bounded() {
    let dir = std::env::temp_dir().join(format!("linerate-fleet-bounds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("hosts.txt");
    let at = format!("@{}", file.display());
    let err = |text: &str| {
        std::fs::write(&file, text).unwrap();
        expand_target(&at, 5301).unwrap_err().to_string()
    };
    // Bytes: one past the bound is refused, the bound itself read (here as too many lines).
    let e = err(&"#".repeat(MAX_HOST_FILE_BYTES as usize + 1));
    assert!(e.contains("longer than the 1048576 bytes"), "{e}");
    let e = err(&"\n".repeat(MAX_HOST_FILE_LINES + 1));
    assert!(e.contains("16385 lines, more than the 16384"), "{e}");
    let e = err(&"h\n".repeat(MAX_TARGETS + 1));
    assert_eq!(e, "1025 targets, more than the 1024 targets one test or fleet may name");
    std::fs::write(&file, "h\n".repeat(MAX_TARGETS)).unwrap();
    assert_eq!(expand_target(&at, 5301).unwrap().len(), MAX_TARGETS);
    // Across the list, as given and as expanded.
    let many: Vec<String> = (0..=MAX_TARGETS).map(|i| format!("h{i}")).collect();
    assert!(matches!(
        expand_all(&many, 5301),
        Err(FleetError::TooManyTargets { count: 1025, max: 1024 })
    ));
    assert!(matches!(
        expand_all(&[at, "h9".into()], 5301),
        Err(FleetError::TooManyTargets { count: 1025, .. })
    ));
    std::fs::remove_dir_all(&dir).unwrap();

    // Cells, counted before any is made: a mesh of 128 fits, one of 129 does not.
    let hosts: Vec<String> = (0..129).map(|i| format!("h{i}")).collect();
    let mesh = |n: usize| Selection {
        pattern: Pattern::Mesh,
        hosts: hosts[..n].to_vec(),
        from: Vec::new(),
        pairs: Vec::new(),
    };
    assert_eq!(mesh(128).layout().unwrap().cells.len(), 16_256);
    assert_eq!(
        mesh(129).layout().unwrap_err(),
        FleetError::TooManyCells {
            pattern: Pattern::Mesh,
            cells: 16_512,
            max: MAX_CELLS
        }
    );
    let wide = Selection {
        pattern: Pattern::Disjoint,
        hosts: hosts[..128].to_vec(),
        from: (0..129).map(|i| format!("f{i}")).collect(),
        pairs: Vec::new(),
    };
    assert!(matches!(
        wide.layout(),
        Err(FleetError::TooManyCells { cells: 16_512, .. })
    ));
}

fn nodes(list: &[Option<&str>]) -> Vec<Option<String>> {
    list.iter().map(|n| n.map(str::to_string)).collect()
}

#[test]
fn different_nodes_leaves_out_the_pairs_on_one_node_and_reschedules() {
    let mut l = select(Pattern::Mesh, &["a", "b", "c", "d"], &[]).layout().unwrap();
    let left_out = l.keep_different_nodes(Pattern::Mesh, &nodes(&[Some("n1"), Some("n1"), Some("n2"), Some("n2")]));
    assert_eq!(left_out, 4, "a<->b and c<->d, both ways");
    let pairs: BTreeSet<(usize, usize)> = l.cells.iter().copied().collect();
    let expected: BTreeSet<(usize, usize)> = [(0, 2), (0, 3), (1, 2), (1, 3), (2, 0), (2, 1), (3, 0), (3, 1)].into();
    assert_eq!(pairs, expected);
    assert_eq!(
        l.hosts,
        names(&["a", "b", "c", "d"]),
        "the hosts stay: they are the matrix's rows"
    );
    assert_valid(&l, true);
    // Two nodes of two: each round pairs one side with the other, 4 rounds of 2.
    assert_eq!(l.rounds.len(), 4, "{:?}", l.rounds);
}

#[test]
fn different_nodes_keeps_a_host_that_names_no_node() {
    let mut l = select(Pattern::Mesh, &["a", "b", "c"], &[]).layout().unwrap();
    // b said nothing (or its clock could not be read); `nodes` may also be short.
    let left_out = l.keep_different_nodes(Pattern::Mesh, &nodes(&[Some("n1"), None]));
    assert_eq!(left_out, 0);
    assert_eq!(l.cells.len(), 6);
    assert_valid(&l, true);
    let mut l = select(Pattern::Mesh, &["a", "b", "c"], &[]).layout().unwrap();
    assert_eq!(
        l.keep_different_nodes(Pattern::Mesh, &nodes(&[Some("n1"), None, Some("n1")])),
        2
    );
    assert!(!l.cells.contains(&(0, 2)) && !l.cells.contains(&(2, 0)));
    assert_valid(&l, true);
}

#[test]
fn different_nodes_on_one_node_leaves_nothing_to_run() {
    let mut l = select(Pattern::Mesh, &["a", "b", "c"], &[]).layout().unwrap();
    let one = nodes(&[Some("n"), Some("n"), Some("n")]);
    assert_eq!(l.keep_different_nodes(Pattern::Mesh, &one), 6);
    assert!(l.cells.is_empty() && l.rounds.is_empty(), "{l:?}");
    // An incast whose senders share the receiver's node but one: one round of that one cell.
    let mut l = select(Pattern::Incast, &["r"], &["s1", "s2", "s3"]).layout().unwrap();
    // Hosts are the senders first, then the receiver.
    let left_out = l.keep_different_nodes(Pattern::Incast, &nodes(&[Some("x"), Some("y"), Some("x"), Some("x")]));
    assert_eq!(left_out, 2);
    assert_eq!(l.cells, vec![(1, 3)]);
    assert_eq!(l.rounds, vec![vec![0]]);
}
