//! Text a peer wrote, made safe for a terminal: cut to a length, every control character (an
//! escape sequence, a forged newline) escaped as `\u{..}`; in one string ([`peer_text`]) or in
//! every string of a document ([`escape_controls`]).

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The most characters of a peer's text (an error message, a quoted bad field) kept for a log
/// line or a terminal.
pub const PEER_TEXT_CHARS: usize = 160;

/// Text a peer sent, made safe to print: at most [`PEER_TEXT_CHARS`] characters (then `...`),
/// every control character (escape sequences, a forged newline) escaped as `\u{..}`.
pub fn peer_text(text: &str) -> String {
    peer_text_cut(text, PEER_TEXT_CHARS)
}

/// [`peer_text`] with another cut: at most `chars` characters (then `...`).
pub fn peer_text_cut(text: &str, chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(chars + 8));
    for (i, c) in text.chars().enumerate() {
        if i == chars {
            out.push_str("...");
            break;
        }
        if c.is_control() {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// `value` with every control character in its strings escaped as `\u{..}` (a peer's host
/// name, interface names, notes; every string of a stored document or row that the results side
/// prints), so none reaches a terminal raw; the value itself when it has
/// none, or when it does not survive the round trip through JSON unchanged in shape.
pub fn escape_controls<T: Serialize + DeserializeOwned>(value: T) -> T {
    // The JSON text first (about the size the report came in): only when it may hold a control
    // character is the value rebuilt as a tree, which takes several times that.
    match serde_json::to_vec(&value) {
        Ok(text) if may_hold_control(&text) => {}
        _ => return value,
    }
    let Ok(mut tree) = serde_json::to_value(&value) else {
        return value;
    };
    if !escape_tree(&mut tree) {
        return value;
    }
    serde_json::from_value(tree).unwrap_or(value)
}

/// Whether JSON text from serde_json may hold a control character in a string: it writes those
/// below U+0020 as `\b \f \n \r \t \u00XX` and DEL and the C1 controls (U+007F to U+009F)
/// raw. A false alarm (an escaped backslash before an `n`) only costs the closer look.
fn may_hold_control(json: &[u8]) -> bool {
    json.contains(&0x7f)
        || json.windows(2).any(|w| {
            (w[0] == b'\\' && matches!(w[1], b'b' | b'f' | b'n' | b'r' | b't' | b'u'))
                || (w[0] == 0xc2 && (0x80..=0x9f).contains(&w[1]))
        })
}

/// Escapes the control characters in every string of `v`, map keys too (a host's address
/// names its record); true if any was found.
fn escape_tree(v: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    let has = |s: &str| s.chars().any(char::is_control);
    match v {
        Value::String(s) if has(s) => {
            *s = peer_text_cut(s, s.len());
            true
        }
        Value::Array(items) => items.iter_mut().fold(false, |any, x| escape_tree(x) | any),
        Value::Object(map) => {
            let keys = map.keys().any(|k| has(k));
            if keys {
                *map = std::mem::take(map)
                    .into_iter()
                    .map(|(k, x)| (peer_text_cut(&k, k.len()), x))
                    .collect();
            }
            map.values_mut().fold(keys, |any, x| escape_tree(x) | any)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn issue_14_a_peers_text_is_cut_and_its_control_characters_escaped() {
        assert_eq!(peer_text("plain words"), "plain words");
        let forged = "bad\nlinerate serve: 10.9.9.9:1: test by admin accepted\u{1b}[2J";
        let safe = peer_text(forged);
        assert!(!safe.contains('\n') && !safe.contains('\u{1b}'), "{safe}");
        assert!(safe.contains("\\u{a}") && safe.contains("\\u{1b}"), "{safe}");
        let long = "x".repeat(1 << 20);
        assert_eq!(peer_text(&long).chars().count(), PEER_TEXT_CHARS + 3);
    }

    #[test]
    fn escape_controls_reaches_every_string_and_map_key() {
        let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
        m.insert("host\u{7}".into(), vec!["ok".into(), "bad\u{9b}".into()]);
        let safe = escape_controls(m);
        assert_eq!(
            safe.get("host\\u{7}"),
            Some(&vec!["ok".to_string(), "bad\\u{9b}".to_string()])
        );
        let plain: BTreeMap<String, u32> = [("a".to_string(), 1)].into();
        assert_eq!(
            escape_controls(plain.clone()),
            plain,
            "nothing to escape: the value itself"
        );
    }
}
