//! Fuzz targets of the results side (tests only), on the engine of
//! `linerate_core::fuzz` (mutations of real inputs, proptest; feature `testing`):
//!
//! - `stored document`: what a shared database may hold in `documents.json`, as text (layout 1)
//!   and as a zlib blob (layout 2), fed to [`store::document::decode`], then [`Document::from_json`],
//!   [`store::document::compact`] and [`store::document::pretty`]. Seeds: a run of each kind,
//!   (tcp, udp, rr), as JSON and compressed, and a small zlib bomb. Checked: no panic or hang; nothing inflates
//!   past the limit (1 MiB here, the store's own is [`store::document::MAX_DOCUMENT_BYTES`]);
//!   a document that reads has no control character left in a string and reads again, as the
//!   same kind, from its own JSON; its one-line and pretty forms are the same document.
//! - `plan`: campaign plans (the examples in `examples/plans/`), as UTF-8 text, fed to
//!   [`plan::parse`] and, when it reads and is small enough to run, expanded into its points.
//!   Checked: no panic or hang; an error names a place inside the text.
//!
//! `cargo test -p linerate-results fuzz` runs [`CASES`] inputs per target;
//! `LINERATE_FUZZ_CASES` sets another number (docs/security.md, "Fuzzing": the long run).

use crate::document::Document;
use crate::{plan, store};
use linerate_core::fuzz;
use store::document::{Encoding, compact, decode_within, encode, pretty};

/// Inputs per target in a plain `cargo test` (a document costs more than a control frame).
const CASES: u32 = 200;
/// The most a fuzzed blob may inflate to: small, so that a bomb costs little per input.
const LIMIT: usize = 1 << 20;
/// The most points a fuzzed plan is expanded to (a vary matrix grows as a product).
const MAX_POINTS: usize = 10_000;

fn documents() -> Vec<String> {
    use linerate_wire::result::Summary;
    use linerate_wire::spec::{RrSpec, TcpSpec, TestSpec, UdpSpec};
    let specs = [
        TestSpec::Tcp(TcpSpec::default()),
        TestSpec::Udp(UdpSpec::default()),
        TestSpec::Rr(RrSpec::default()),
    ];
    specs
        .into_iter()
        .map(|spec| {
            let run = linerate_core::sweep::stub_result(spec, Summary::default());
            serde_json::to_string(&run).expect("a run serializes")
        })
        .collect()
}

/// Whether any string of `v` (keys too) holds a control character.
fn has_control(v: &serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::String(s) => s.chars().any(char::is_control),
        Value::Array(a) => a.iter().any(has_control),
        Value::Object(m) => m.iter().any(|(k, x)| k.chars().any(char::is_control) || has_control(x)),
        _ => false,
    }
}

/// One stored blob, read as both encodings.
fn check_stored(bytes: &[u8]) -> Result<(), String> {
    for encoding in [Encoding::Json, Encoding::Zlib] {
        let Ok(text) = decode_within(bytes, encoding, LIMIT) else {
            continue;
        };
        if text.len() > LIMIT {
            return Err(format!("{} bytes inflated past the limit", text.len()));
        }
        check_text(&text)?;
    }
    Ok(())
}

/// A document's text, as the readers take it.
fn check_text(text: &str) -> Result<(), String> {
    if let (Ok(line), Ok(pretty)) = (compact(text), pretty(text)) {
        let back = compact(&pretty).map_err(|e| format!("pretty form does not read: {e}"))?;
        if back != line {
            return Err("one-line and pretty forms differ".into());
        }
    }
    let Ok(doc) = Document::from_json(text) else {
        return Ok(());
    };
    let again = match &doc {
        Document::Run(r) => serde_json::to_value(r),
        Document::Repeated(r) => serde_json::to_value(r),
        Document::Sweep(s) => serde_json::to_value(s),
        Document::Comparison(c) => serde_json::to_value(c),
        Document::Matrix(m) => serde_json::to_value(m),
    }
    .map_err(|e| format!("a read document does not serialize: {e}"))?;
    if has_control(&again) {
        return Err("a control character survived reading".into());
    }
    // The same kind again (not compared field by field: a float may read one unit in the last
    // place off without serde_json's `float_roundtrip`).
    let reread = Document::from_json(&again.to_string()).map_err(|e| format!("does not read again: {e}"))?;
    if reread.test() != doc.test() {
        return Err(format!("a {} reads back as a {}", doc.test(), reread.test()));
    }
    Ok(())
}

/// One plan's text.
fn check_plan(bytes: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(bytes);
    match plan::parse(&text) {
        Err(e) => {
            let lines = text.matches('\n').count() + 1;
            if e.at.line == 0 || e.at.line > lines {
                return Err(format!("error at line {} of {lines}: {e}", e.at.line));
            }
        }
        Ok(p) => {
            let points: usize = p
                .tests
                .iter()
                .map(|t| {
                    t.vary
                        .iter()
                        .fold(t.variants.len().max(1), |n, v| n.saturating_mul(v.values.len()))
                })
                .fold(0usize, usize::saturating_add);
            if points <= MAX_POINTS {
                let got = p.points(false, |_, a, b| plan::same_option(a, b)).len();
                if got != points {
                    return Err(format!("{got} points, the matrix has {points}"));
                }
            }
        }
    }
    Ok(())
}

#[test]
fn fuzz_stored_documents() {
    let docs = documents();
    let mut seeds: Vec<Vec<u8>> = docs.iter().map(|d| d.as_bytes().to_vec()).collect();
    seeds.extend(docs.iter().map(|d| encode(d).expect("encode")));
    // A bomb: 4 MiB of spaces in about 4 KB.
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut z, &vec![b' '; 4 << 20]).expect("compress");
    seeds.push(z.finish().expect("compress"));
    let cases = fuzz::cases_or(CASES);
    let figures = fuzz::run_cases("stored document", &seeds, cases, check_stored);
    assert_eq!(figures.inputs, u64::from(cases));
}

#[test]
fn fuzz_plans() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/plans");
    let mut seeds: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .expect("examples/plans")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "toml"))
        .map(|e| std::fs::read(e.path()).expect("read a plan"))
        .collect();
    assert!(!seeds.is_empty(), "no plans in {dir}");
    seeds.sort();
    let cases = fuzz::cases_or(CASES);
    let figures = fuzz::run_cases("plan", &seeds, cases, check_plan);
    assert_eq!(figures.inputs, u64::from(cases));
}

#[test]
fn fuzz_checks_see_what_they_look_for() {
    let doc = &documents()[0];
    assert_eq!(check_text(doc), Ok(()));
    assert_eq!(check_stored(&encode(doc).expect("encode")), Ok(()));
    let hostile = doc.replacen("\"linerate\":\"", "\"linerate\":\"\\u001b[2J", 1);
    assert_ne!(&hostile, doc);
    assert_eq!(check_text(&hostile), Ok(()), "read, and escaped");
    assert!(
        check_plan(b"name = \"x\"\n[[test]]\nkind = \"tcp\"\ntargets = [\"h\"]\nvary = { length = [\"1\", \"2\"] }\n")
            .is_ok()
    );
}
