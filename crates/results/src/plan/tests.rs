use super::*;

const NTTTCP: &str = r#"
name = "ntttcp"
[defaults]
time = "30s"
[quick]
time = "1s"

[[test]]
name = "send"
kind = "tcp"
targets = ["127.0.0.1"]
parallel = 4
bidir = false
repeat = 5
vary = { length = ["64K", "1M"], threads = "1:2:1" }

[[test.variant]]
name = "A"
window = "1M"

[[test.variant]]
name = "B"
window = 4194304
profile = "offload-on"
"#;

#[test]
fn a_plan_reads_into_tests_variants_and_varied_options() {
    let plan = parse(NTTTCP).expect("reads");
    assert_eq!(plan.name, "ntttcp");
    let t = &plan.tests[0];
    assert_eq!((t.name.as_str(), t.kind), ("send", Kind::Tcp));
    let options: Vec<_> = t
        .settings
        .iter()
        .map(|s| (s.option.as_str(), s.value.to_string()))
        .collect();
    assert_eq!(
        options,
        [
            ("parallel", "4".to_string()),
            ("bidir", "false".to_string()),
            ("repeat", "5".to_string())
        ]
    );
    assert_eq!(t.vary.len(), 2);
    assert_eq!(
        t.vary[1].values,
        [OptionValue::One("1".into()), OptionValue::One("2".into())]
    );
    assert_eq!(t.variants[1].profile.as_deref(), Some("offload-on"));
    assert_eq!(t.variants[1].settings[0].value, OptionValue::One("4194304".into()));
    assert_eq!(
        t.settings[0].at,
        Position { line: 12, column: 1 },
        "the first line is empty"
    );
}

#[test]
fn points_are_the_matrix_times_the_variants_with_layers_in_order() {
    let plan = parse(NTTTCP).expect("reads");
    let points = plan.points(false, |_, _, _| false);
    assert_eq!(
        points.len(),
        2 * 2 * 2,
        "two lengths x two thread counts x two variants"
    );
    // Variants side by side at each value; the last varied option fastest.
    let coords: Vec<String> = points
        .iter()
        .map(|p| {
            let c: Vec<String> = p.coordinates.iter().map(|(o, v)| format!("{o}={v}")).collect();
            format!("{} {}", c.join(" "), p.variant.map_or("-".into(), |v| v.to_string()))
        })
        .collect();
    assert_eq!(coords[0], "length=64K threads=1 0");
    assert_eq!(coords[1], "length=64K threads=1 1");
    assert_eq!(coords[2], "length=64K threads=2 0");
    assert_eq!(coords[7], "length=1M threads=2 1");
    let time = |p: &Point| {
        p.settings
            .iter()
            .find(|s| s.option == "time")
            .map(|s| s.value.to_string())
    };
    assert_eq!(time(&points[0]).as_deref(), Some("30s"));
    assert_eq!(
        time(&plan.points(true, |_, _, _| false)[0]).as_deref(),
        Some("1s"),
        "quick lays over the defaults"
    );
    let window = |p: &Point| {
        p.settings
            .iter()
            .find(|s| s.option == "window")
            .map(|s| s.value.to_string())
    };
    assert_eq!(window(&points[0]).as_deref(), Some("1M"));
    assert_eq!(window(&points[1]).as_deref(), Some("4194304"));
    // A variant's agent profile is the test command's `--profile`.
    let profile = |p: &Point| {
        p.settings
            .iter()
            .find(|s| s.option == "profile")
            .map(|s| s.value.to_string())
    };
    assert_eq!(profile(&points[0]), None);
    assert_eq!(profile(&points[1]).as_deref(), Some("offload-on"));
}

#[test]
fn errors_name_their_line_and_column() {
    let bad_toml = "name = \"x\"\n[[test]]\nkind = \"tcp\"\ntargets = [\"h\"\n";
    let e = parse(bad_toml).expect_err("unclosed array");
    assert_eq!(e.at.line, 4, "{e}");

    let unknown_key = "name = \"x\"\ndescriptoin = \"y\"\n[[test]]\nkind = \"tcp\"\ntargets = [\"h\"]\n";
    let e = parse(unknown_key).expect_err("unknown top-level key");
    assert_eq!(e.at, Position { line: 2, column: 1 });
    assert!(e.to_string().contains("did you mean `description`"), "{e}");

    let bad_kind = "name = \"x\"\n[[test]]\nkind = \"sctp\"\ntargets = [\"h\"]\n";
    let e = parse(bad_kind).expect_err("unknown kind");
    assert_eq!(e.at, Position { line: 3, column: 8 });

    let no_targets = "name = \"x\"\n[[test]]\nkind = \"udp\"\n";
    assert!(
        parse(no_targets)
            .expect_err("no targets")
            .to_string()
            .contains("names no `targets`")
    );

    let both =
        "name = \"x\"\n[[test]]\nkind = \"tcp\"\ntargets = [\"h\"]\nlength = \"1K\"\nvary = { length = [\"2K\"] }\n";
    let e = parse(both).expect_err("set and varied");
    assert_eq!(e.at.line, 5, "{e}");

    let dashes = "name = \"x\"\n[[test]]\nkind = \"tcp\"\ntargets = [\"h\"]\n\"--length\" = \"1K\"\n";
    assert!(
        parse(dashes)
            .expect_err("dashes")
            .to_string()
            .contains("without dashes")
    );
}

#[test]
fn ranges_expand_with_their_end_and_refuse_nonsense() {
    assert_eq!(expand_range("1:4:1").expect("range"), ["1", "2", "3", "4"]);
    assert_eq!(expand_range("0.1:0.3:0.1").expect("range"), ["0.1", "0.2", "0.3"]);
    assert!(expand_range("4:1:1").is_err());
    assert!(expand_range("1:4:0").is_err());
    assert!(expand_range("1K:4K:1K").is_err(), "units belong in lists");
    assert!(expand_range("0:1e9:1").is_err(), "too many values");
}

#[test]
fn integers_keep_their_value_in_any_radix() {
    assert_eq!(integer_text("1_000", 10).as_deref(), Some("1000"));
    assert_eq!(integer_text("0x10", 16).as_deref(), Some("16"));
    assert_eq!(integer_text("-5", 10).as_deref(), Some("-5"));
}

#[test]
fn the_nearest_name_is_offered_only_when_close() {
    assert_eq!(nearest("lenght", ["length", "window"]), Some("length"));
    assert_eq!(nearest("zzzzzz", ["length", "window"]), None);
}

#[test]
fn a_later_layer_replaces_an_option_it_conflicts_with() {
    let text = "name = \"x\"\n[defaults]\ntime = \"30s\"\n[[test]]\nkind = \"rr\"\ntargets = [\"h\"]\ncount = 100\n";
    let plan = parse(text).expect("reads");
    let points = plan.points(false, |_, a, b| (a, b) == ("time", "count"));
    let options: Vec<&str> = points[0].settings.iter().map(|s| s.option.as_str()).collect();
    assert_eq!(options, ["count"]);
    let points = plan.points(false, |_, _, _| false);
    assert_eq!(points[0].settings.len(), 2, "without the conflict both stay");
}

const FLEET: &str = r#"name = "fleet"
[[test]]
name = "mesh"
kind = "tcp"
pattern = "mesh"
hosts = ["h2", "h3", "h4"]
different_nodes = true
skew_bound = "20ms"

[[test]]
name = "incast"
kind = "tcp"
pattern = "incast"
from = ["h2", "h3"]
to = "h1"

[[test]]
name = "pairs"
kind = "rr"
pattern = "pairs"
pairs = [["h2", "h3"], ["h4", "h5"]]
"#;

#[test]
fn issue_24_pattern_tests_read_into_targets_and_options() {
    let plan = parse(FLEET).expect("reads");
    let [mesh, incast, pairs] = &plan.tests[..] else {
        panic!("three tests")
    };
    assert_eq!(mesh.targets, ["h2", "h3", "h4"]);
    let options = |t: &PlanTest| -> Vec<(String, String)> {
        t.settings
            .iter()
            .map(|s| (s.option.clone(), s.value.to_string()))
            .collect()
    };
    assert_eq!(
        options(mesh),
        [
            ("pattern".to_string(), "mesh".to_string()),
            ("different_nodes".into(), "true".into()),
            ("skew_bound".into(), "20ms".into())
        ]
    );
    assert_eq!(incast.targets, ["h1"]);
    assert_eq!(
        incast.settings[1].value,
        OptionValue::Many(vec!["h2".into(), "h3".into()])
    );
    assert!(pairs.targets.is_empty());
    assert_eq!(pairs.settings[1].option, "pair");
    assert_eq!(
        pairs.settings[1].value,
        OptionValue::Many(vec!["h2,h3".into(), "h4,h5".into()])
    );
    assert_eq!(pairs.settings[1].at, Position { line: 21, column: 1 });
}

#[test]
fn issue_24_a_bad_pattern_names_its_line() {
    let err = |text: &str| parse(text).unwrap_err().to_string();
    let e = err(&FLEET.replace("pattern = \"mesh\"", "pattern = \"ring\""));
    assert!(e.starts_with("line 5, column 1: 'ring' is not a pattern"), "{e}");
    let e = err(&FLEET.replace("to = \"h1\"", "to = \"h1\"\ntargets = [\"h9\"]"));
    assert!(
        e.starts_with("line 16, column") && e.contains("names its targets twice"),
        "{e}"
    );
    let e = err(&FLEET.replace("[\"h4\", \"h5\"]", "[\"h4\"]"));
    assert!(
        e.starts_with("line 21, column 24: `pairs` takes a list of pairs"),
        "{e}"
    );
    let e = err(&FLEET.replace("pairs = [[\"h2\", \"h3\"], [\"h4\", \"h5\"]]\n", ""));
    assert!(e.contains("test `pairs` names no `targets`"), "{e}");
}
