//! The result document as JSON, the form docs/results.md describes.

use linerate_core::result::TestResult;

/// The document, pretty-printed, with a trailing newline.
pub fn render(result: &TestResult) -> String {
    let mut s = serde_json::to_string_pretty(result).expect("a result is plain data and always serialises");
    s.push('\n');
    s
}
