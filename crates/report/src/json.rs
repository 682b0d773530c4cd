//! The result document as JSON, the form docs/results.md describes.

use linerate_wire::result::{SCHEMA, TestResult};
use serde::Serialize;

/// The document, pretty-printed, with a trailing newline ([`linerate_results::document::to_json`]).
pub fn render(result: &TestResult) -> String {
    linerate_results::document::to_json(result)
}

/// Any other document linerate prints (`sys`, `sys --config`, `doctor`, `calc`): the same
/// `linerate` and `schema` heading as a result, then the body's own fields (every
/// document carries the schema version).
#[derive(Serialize)]
struct Headed<'a, T: Serialize> {
    linerate: &'a str,
    schema: u32,
    #[serde(flatten)]
    body: &'a T,
}

/// `body` (a struct, or a map such as `{"findings": [...]}`) headed with the version and schema,
/// on one line (`pretty`: indented, with a trailing newline).
pub fn headed<T: Serialize>(body: &T, pretty: bool) -> String {
    let doc = Headed {
        linerate: linerate_wire::VERSION,
        schema: SCHEMA,
        body,
    };
    if pretty {
        linerate_results::document::to_json(&doc)
    } else {
        serde_json::to_string(&doc).expect("plain data always serialises")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_13_other_documents_carry_the_schema() {
        #[derive(Serialize)]
        struct Body {
            rows: Vec<u32>,
        }
        let v: serde_json::Value = serde_json::from_str(&headed(&Body { rows: vec![1, 2] }, false)).expect("JSON");
        assert_eq!(v["schema"], SCHEMA);
        assert_eq!(v["rows"][1], 2);
        assert!(v["linerate"].is_string());
    }
}
