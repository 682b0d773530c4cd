//! Text on a figure, measured: the SVG holds no font, so where labels go is planned from
//! DejaVu Sans's advance widths, and each placed text keeps its box so that none overlaps
//! another.

use super::{ASCENT, DESCENT};

/// The advance width of `text` in px at `size` px, from DejaVu Sans's widths (the default
/// sans-serif of most Linux systems and a wide one, so narrower fonts only leave more room):
/// the SVG holds no font, so its layout is planned from these.
pub fn text_width(text: &str, size: f64) -> f64 {
    let em: f64 = text
        .chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | '\'' | '|' => 0.28,
            ' ' | '.' | ',' | ':' | ';' | '!' => 0.33,
            'f' | 't' | 'I' | '(' | ')' | '[' | ']' | '/' | '-' => 0.4,
            'r' => 0.42,
            's' | 'z' | 'c' | 'J' => 0.56,
            'm' => 0.98,
            'w' => 0.82,
            'M' | 'W' | '%' | '…' => 1.0,
            '+' | '=' | '<' | '>' | '±' | '×' | '~' => 0.84,
            'A'..='Z' => 0.78,
            c if c.is_ascii() => 0.64,
            _ => 0.8,
        })
        .sum();
    em * size
}

/// `text` cut to at most `width` px at `size`, with an ellipsis where it was cut.
pub(super) fn fit_text(text: &str, size: f64, width: f64) -> String {
    if text_width(text, size) <= width {
        return text.to_string();
    }
    let mut out = String::new();
    for c in text.chars() {
        let next = format!("{out}{c}…");
        if text_width(&next, size) > width {
            break;
        }
        out.push(c);
    }
    format!("{}…", out.trim_end())
}

/// A text's box on the figure, px.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct TextBox {
    pub(super) l: f64,
    pub(super) r: f64,
    pub(super) t: f64,
    pub(super) b: f64,
}

impl TextBox {
    /// The box of a line of text of width `w` whose baseline starts at (x, y) (anchor start).
    pub(super) fn line(x: f64, y: f64, w: f64) -> TextBox {
        TextBox {
            l: x,
            r: x + w,
            t: y - ASCENT,
            b: y + DESCENT,
        }
    }

    pub(super) fn overlaps(&self, o: &TextBox) -> bool {
        self.l < o.r && o.l < self.r && self.t < o.b && o.t < self.b
    }
}
