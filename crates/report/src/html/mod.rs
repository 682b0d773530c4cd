//! The report page: one self-contained HTML file (inline CSS and SVG, a few lines of inline
//! script to hide and show series; nothing fetched from anywhere) that reads without script,
//! opens from file:// and prints. In: sections of tables and [`Figure`]s (`tables` builds them
//! from a document); out: the page's text. The binary writes it.

mod block;
mod fleet;
mod latency;
mod sets;
mod tables;

use crate::figures::{Subject, figures};
use crate::plot::{Figure, escape, svg};
pub use block::{Block, Table};
use linerate_results::document::Document;

/// What the page shows of one source.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// Element id of the section: `source-1`.
    pub id: String,
    pub heading: String,
    pub blocks: Vec<Block>,
}

impl Section {
    /// `table` as the section's first table: after its summary and figures, before the other
    /// tables (the stored record of a source named by id).
    pub fn insert_first_table(&mut self, table: Table) {
        let at = self
            .blocks
            .iter()
            .position(|b| matches!(b, Block::Table(_) | Block::Text { .. }))
            .unwrap_or(self.blocks.len());
        self.blocks.insert(at, Block::Table(table));
    }

    /// The figures of this section.
    pub fn figures(&self) -> impl Iterator<Item = &Figure> {
        self.blocks.iter().filter_map(|b| match b {
            Block::Figure(f) => Some(f),
            _ => None,
        })
    }
}

/// The tables of a section, with the text report last.
fn blocks(subject: &Subject) -> Vec<Block> {
    match subject {
        Subject::Document(Document::Run(r)) => {
            let mut summary = sets::run_summary(r);
            if let (Block::Summary(lines), Some(line)) = (&mut summary, latency::summary_line(r)) {
                lines.push(line);
            }
            let mut out = vec![summary];
            out.extend(latency::tables(r));
            out.push(Block::Table(tables::test_table(r)));
            out.push(Block::Table(tables::sides_table(r)));
            out.extend(tables::config_table(r).map(Block::Table));
            out.push(Block::Text {
                summary: "Text report".to_string(),
                text: crate::text::render(r),
            });
            out
        }
        Subject::Document(Document::Sweep(s)) => vec![
            Block::Table(tables::points_table(s)),
            Block::Text {
                summary: "Text report".to_string(),
                text: crate::sweep::text(s),
            },
        ],
        Subject::Document(Document::Repeated(rep)) => sets::repeated(rep),
        Subject::Document(Document::Comparison(c)) => sets::comparison(c),
        Subject::Document(Document::Matrix(m)) => fleet::matrix(m),
        Subject::Campaign(c) => sets::campaign(c),
    }
}

/// The section for `subject`, the `n`-th (from 1) of `of` sources named `name`. With several
/// sources, figure ids are prefixed `sN-` so they stay unique in the page.
pub fn section(subject: &Subject, name: &str, n: usize, of: usize) -> Section {
    let mut figs = figures(subject);
    if of > 1 {
        for f in &mut figs {
            f.id = format!("s{n}-{}", f.id);
        }
    }
    // The answer first: the summary, the figures (the headline one leading), then the
    // tables, long ones folded, then the text report.
    let (summary, rest): (Vec<Block>, Vec<Block>) = blocks(subject)
        .into_iter()
        .partition(|b| matches!(b, Block::Summary(_)));
    let mut blocks = summary;
    blocks.extend(figs.into_iter().map(Block::Figure));
    blocks.extend(rest);
    Section {
        id: format!("source-{n}"),
        heading: format!("{}: {name}", subject.test()),
        blocks,
    }
}

const CSS: &str = "\
body{font-family:sans-serif;margin:1.5em auto;max-width:760px;color:#111;line-height:1.35}
h1{font-size:1.4em}h2{font-size:1.2em;border-bottom:1px solid #999;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.85em}
caption{text-align:left;font-weight:bold;padding:.3em 0}
th,td{border:1px solid #bbb;padding:.15em .5em;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#eee;text-align:left}
figure{margin:1em 0;break-inside:avoid}figcaption{font-size:.85em;color:#333;max-width:720px}
svg{max-width:100%;height:auto}.js .legend-item{cursor:pointer}
pre{font-size:.75em;overflow-x:auto;background:#f6f6f6;padding:.5em}
.summary{background:#f3f6fa;border-left:4px solid #0072B2;padding:.3em .8em;margin:.6em 0}
.summary p{margin:.3em 0;font-weight:bold}.summary ul{margin:.2em 0;padding-left:1.2em}
details.table>summary{font-weight:bold;font-size:.85em;margin:.4em 0;cursor:pointer}
@media print{body{max-width:none;margin:0}h2{break-after:avoid}table,figure{break-inside:avoid}
.js .legend-item{cursor:default}pre{white-space:pre-wrap}details.text{display:none}
details.table::details-content{content-visibility:visible;display:contents}}
";

/// Clicking a legend entry hides or shows its series; the page reads the same without it. It
/// marks the page (`<html class="js">`) so that legend entries look clickable only when they are.
const SCRIPT: &str = "document.documentElement.className='js';document.addEventListener('click',function(e){var g=e.target.closest&&e.target.closest('.legend-item');if(!g)return;var s=document.getElementById(g.getAttribute('data-series'));if(!s)return;var off=s.style.display==='none';s.style.display=off?'':'none';g.style.opacity=off?'1':'0.35';});";

/// The Content-Security-Policy's hash of [`SCRIPT`] (SHA-256 of its exact text, base64): the one
/// script the page may run. A script injected into the page would not match it.
const SCRIPT_HASH: &str = "sha256-ue8p+vhJrBS8Akhl0nk6Yetz+7EJs/pCve34/d5gAT0=";

/// The whole page over `sections`.
pub fn page(title: &str, sections: &[Section]) -> String {
    let mut o = String::with_capacity(64 * 1024);
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    // Nothing may be fetched: no scripts, styles, images or frames from anywhere else.
    // Scripts: only the page's own, by its hash (no 'unsafe-inline': an injected one never runs).
    o.push_str(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src '{SCRIPT_HASH}'; img-src data:\">"
    ));
    o.push_str(&format!(
        "<title>{}</title><style>{CSS}</style></head><body>\n",
        escape(title)
    ));
    o.push_str(&format!("<h1>{}</h1>\n", escape(title)));
    if sections.len() > 1 {
        o.push_str("<nav><ul>");
        for s in sections {
            let (id, heading) = (escape(&s.id), escape(&s.heading));
            o.push_str(&format!("<li><a href=\"#{id}\">{heading}</a></li>"));
        }
        o.push_str("</ul></nav>\n");
    }
    for (n, s) in sections.iter().enumerate() {
        let (id, heading) = (escape(&s.id), escape(&s.heading));
        o.push_str(&format!("<section id=\"{id}\"><h2>{heading}</h2>\n"));
        for b in &s.blocks {
            match b {
                Block::Table(t) => o.push_str(&t.html_folded()),
                Block::Summary(lines) => {
                    let id = if n == 0 {
                        "summary".to_string()
                    } else {
                        format!("summary-{}", n + 1)
                    };
                    o.push_str(&format!("<div class=\"summary\" id=\"{id}\">"));
                    if let Some((lead, rest)) = lines.split_first() {
                        o.push_str(&format!("<p>{}</p>", escape(lead)));
                        if !rest.is_empty() {
                            o.push_str("<ul>");
                            for l in rest {
                                o.push_str(&format!("<li>{}</li>", escape(l)));
                            }
                            o.push_str("</ul>");
                        }
                    }
                    o.push_str("</div>\n");
                }
                Block::Figure(f) => {
                    o.push_str(&format!(
                        "<figure>{}<figcaption>{}</figcaption></figure>\n",
                        svg::render(f),
                        escape(&f.description)
                    ));
                }
                Block::Text { summary, text } => o.push_str(&format!(
                    "<details class=\"text\"><summary>{}</summary><pre>{}</pre></details>\n",
                    escape(summary),
                    escape(text)
                )),
            }
        }
        o.push_str("</section>\n");
    }
    o.push_str(&format!(
        "<p><small>Made by linerate {} from the documents named above; 1 Mbit = 10<sup>6</sup> bits.</small></p>",
        escape(linerate_wire::VERSION)
    ));
    o.push_str(&format!("<script>{SCRIPT}</script></body></html>\n"));
    o
}

/// Every figure of `figs` as one SVG file: each figure's own `<svg>` stacked in an outer one.
pub fn svg_file(figs: &[&Figure]) -> String {
    let mut y = 0.0;
    let mut body = String::new();
    for f in figs {
        let inner = svg::render(f);
        // Place each figure by rewriting its root's opening tag with a y offset.
        body.push_str(&inner.replacen("<svg ", &format!("<svg y=\"{y}\" "), 1));
        y += svg::height(f);
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{y}\" viewBox=\"0 0 {w} {y}\">{body}</svg>\n",
        w = svg::WIDTH
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::{Axis, Point, Series, Style};

    fn fig(id: &str) -> Figure {
        let mut f = Figure::new(id, "A <title>", Axis::linear("x", "s"), Axis::linear("y", "Mbit/s"));
        f.series.push(Series::new(
            "s",
            Style::Line,
            vec![Point::xy(0.0, 1.0), Point::xy(1.0, 2.0)],
        ));
        f
    }

    #[test]
    fn issue_22_the_csp_allows_only_the_pages_own_script_by_its_hash() {
        use base64::Engine;
        use sha2::Digest;
        let digest = sha2::Sha256::digest(SCRIPT.as_bytes());
        let hash = format!("sha256-{}", base64::engine::general_purpose::STANDARD.encode(digest));
        assert_eq!(SCRIPT_HASH, hash, "SCRIPT changed: its hash must follow");
        let html = page("t", &[]);
        let csp = html
            .split("Content-Security-Policy\" content=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("a CSP");
        let scripts = csp
            .split(';')
            .find(|d| d.trim().starts_with("script-src"))
            .expect("script-src");
        assert_eq!(scripts.trim(), format!("script-src '{hash}'"));
        assert!(
            html.contains(&format!("<script>{SCRIPT}</script>")),
            "the script is the hashed text exactly"
        );
    }

    #[test]
    fn the_page_fetches_nothing_and_escapes_its_text() {
        let s = Section {
            id: "source-1".into(),
            heading: "tcp: <x>.json".into(),
            blocks: vec![
                Block::Figure(fig("fig-a")),
                Block::Text {
                    summary: "text".into(),
                    text: "</pre><script>".into(),
                },
            ],
        };
        let html = page("Report & more", &[s]);
        assert!(html.contains("<title>Report &amp; more</title>"));
        assert!(html.contains("tcp: &lt;x&gt;.json"));
        assert!(html.contains("&lt;/pre&gt;&lt;script&gt;"));
        assert!(html.contains("id=\"fig-a\""));
        for fetch in ["src=", "href=\"http", "url(http", "@import", "<link"] {
            assert!(!html.contains(fetch), "{fetch}");
        }
    }

    #[test]
    fn an_svg_file_stacks_the_figures() {
        let (a, b) = (fig("fig-a"), fig("fig-b"));
        let s = svg_file(&[&a, &b]);
        assert!(s.contains("<svg y=\"0\" xmlns"));
        assert!(s.contains(&format!("<svg y=\"{}\" xmlns", svg::height(&a))));
        assert!(s.contains("id=\"fig-b\""));
    }
}
