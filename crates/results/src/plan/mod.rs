//! Campaign plans: a TOML file naming tests, their options, the options to vary and
//! labelled variants, read into typed data and expanded into the points a campaign runs. No
//! option is interpreted here: an option is a test command's long flag (`length = "64K"` is
//! `--length 64K`), checked by the command line itself, so a plan accepts exactly what the
//! command does. Every setting keeps where it was written, so an error names its line and
//! column.
//!
//! ```toml
//! name = "ntttcp"
//! [defaults]                      # options of every test
//! time = "30s"
//! [quick]                         # laid over everything under `plan run --quick`
//! time = "1s"
//! [[test]]
//! name = "send"
//! kind = "tcp"                    # tcp, udp, rr, http
//! targets = ["127.0.0.1"]
//! parallel = 4                    # any long flag of `linerate tcp`
//! repeat = 5                      # the repetition flags are options too
//! best = 3
//! vary = { length = ["64K", "256K", "1M"] }   # a list, or "A:B:STEP" of plain numbers
//! [[test.variant]]
//! name = "A"
//! window = "1M"
//! [[test.variant]]
//! name = "B"
//! window = "4M"
//! profile = "offload-on"          # asks the agent for a profile it was started with
//! [[test]]
//! name = "fleet"
//! kind = "tcp"
//! pattern = "mesh"                # --pattern: mesh, disjoint, incast, outcast, pairs
//! hosts = ["h2", "h3", "h4"]      # mesh: its hosts; disjoint, incast, outcast take
//!                                 # from = [...] (--from) and to = [...] (the targets)
//! # pairs = [["h2", "h3"], ["h4", "h5"]]   # pairs: each one --pair FROM,TO
//! different_nodes = true
//! ```

pub mod campaign;
mod expand;

pub use expand::{Point, expand_range};

use std::fmt;
use toml::de::{DeTable, DeValue};

/// Where something was written: 1-based line and column (in characters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    pub(crate) fn of(text: &str, offset: usize) -> Position {
        let before = &text[..offset.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Position { line, column }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// A plan that cannot be read: what is wrong and where.
#[derive(Debug, thiserror::Error)]
#[error("{at}: {message}")]
pub struct PlanError {
    pub at: Position,
    pub message: String,
}

/// One option's value as written: a switch (`bidir = true`), one value, or several (a flag
/// given more than once, `label = ["a=1", "b=2"]`). Numbers keep their text.
#[derive(Clone, Debug, PartialEq)]
pub enum OptionValue {
    Switch(bool),
    One(String),
    Many(Vec<String>),
}

impl fmt::Display for OptionValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionValue::Switch(b) => write!(f, "{b}"),
            OptionValue::One(v) => f.write_str(v),
            OptionValue::Many(v) => f.write_str(&v.join(",")),
        }
    }
}

/// `option = value`, where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    /// The long flag's name without dashes: `length`, `peer-cpus` (`peer_cpus` is taken too).
    pub option: String,
    pub value: OptionValue,
    pub at: Position,
}

/// The test kinds a plan runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Tcp,
    Udp,
    Rr,
    Http,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Tcp => "tcp",
            Kind::Udp => "udp",
            Kind::Rr => "rr",
            Kind::Http => "http",
        }
    }
}

/// An option varied over values; several make a matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Vary {
    pub option: String,
    pub values: Vec<OptionValue>,
    pub at: Position,
}

/// A labelled alternative of a test: other targets, other options, an agent profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    pub name: String,
    pub targets: Option<Vec<String>>,
    pub settings: Vec<Setting>,
    /// The agent profile to run the variant under (`serve --profile NAME=COMMAND`).
    pub profile: Option<String>,
    pub at: Position,
}

/// One `[[test]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanTest {
    pub name: String,
    pub kind: Kind,
    /// Agents (tcp, udp, rr) or URLs (http), as on the command line.
    pub targets: Vec<String>,
    pub settings: Vec<Setting>,
    pub vary: Vec<Vary>,
    pub variants: Vec<Variant>,
    /// Commands run on this machine before and after the test (`sh -c`).
    pub setup: Vec<String>,
    pub teardown: Vec<String>,
    pub at: Position,
}

/// A whole plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub name: String,
    pub description: Option<String>,
    /// Options of every test, under each test's own.
    pub defaults: Vec<Setting>,
    /// Options laid over everything when the plan runs with `--quick`.
    pub quick: Vec<Setting>,
    pub setup: Vec<String>,
    pub teardown: Vec<String>,
    pub tests: Vec<PlanTest>,
}

/// Keys of a `[[test]]` that are not options (`pairs` becomes `--pair` options).
const TEST_KEYS: &[&str] = &[
    "name", "kind", "targets", "hosts", "to", "pairs", "vary", "variant", "setup", "teardown",
];
/// The keys that name a test's targets: one of them at most (a mesh's `hosts`, the `to` side
/// of a pattern, or plain `targets`).
const TARGET_KEYS: &[&str] = &["targets", "hosts", "to"];
/// Keys of a `[[test.variant]]` that are not options.
const VARIANT_KEYS: &[&str] = &["name", "targets", "profile"];
/// Keys at the top of a plan.
const PLAN_KEYS: &[&str] = &["name", "description", "defaults", "quick", "setup", "teardown", "test"];

type Spanned<T> = toml::Spanned<T>;

/// Reads a plan. Options are not checked here (the command line does that); the shape is.
pub fn parse(text: &str) -> Result<Plan, PlanError> {
    let table = DeTable::parse(text).map_err(|e| PlanError {
        at: Position::of(text, e.span().map_or(0, |s| s.start)),
        message: e.message().trim().to_string(),
    })?;
    let r = Reader { text };
    let top = table.get_ref();
    r.only(top, PLAN_KEYS, "a plan")?;
    let name = match top.get("name") {
        Some(v) => r.string(v, "name")?,
        None => return Err(r.error(0, "the plan has no `name`")),
    };
    let tests = match top.get("test") {
        Some(v) => r
            .tables(v, "test")?
            .into_iter()
            .map(|(t, at)| r.test(t, at))
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    if tests.is_empty() {
        return Err(r.error(text.len(), "the plan has no [[test]]"));
    }
    Ok(Plan {
        name,
        description: top.get("description").map(|v| r.string(v, "description")).transpose()?,
        defaults: top
            .get("defaults")
            .map_or(Ok(Vec::new()), |v| r.settings_of(v, "defaults", &[]))?,
        quick: top
            .get("quick")
            .map_or(Ok(Vec::new()), |v| r.settings_of(v, "quick", &[]))?,
        setup: top.get("setup").map_or(Ok(Vec::new()), |v| r.commands(v, "setup"))?,
        teardown: top
            .get("teardown")
            .map_or(Ok(Vec::new()), |v| r.commands(v, "teardown"))?,
        tests,
    })
}

/// Reads parts of the parsed document, turning spans into positions.
struct Reader<'t> {
    text: &'t str,
}

impl Reader<'_> {
    fn error(&self, offset: usize, message: impl Into<String>) -> PlanError {
        PlanError {
            at: Position::of(self.text, offset),
            message: message.into(),
        }
    }

    fn at(&self, offset: usize) -> Position {
        Position::of(self.text, offset)
    }

    /// Refuses keys other than `known`.
    fn only(&self, table: &DeTable<'_>, known: &[&str], what: &str) -> Result<(), PlanError> {
        for key in table.keys() {
            if !known.contains(&key.get_ref().as_ref()) {
                let hint = nearest(key.get_ref(), known.iter().copied())
                    .map_or(String::new(), |n| format!(" (did you mean `{n}`?)"));
                return Err(self.error(
                    key.span().start,
                    format!(
                        "`{}` is not a key of {what}{hint}; it takes {}",
                        key.get_ref(),
                        known.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    fn string(&self, v: &Spanned<DeValue<'_>>, key: &str) -> Result<String, PlanError> {
        v.get_ref()
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| self.error(v.span().start, format!("`{key}` must be a string")))
    }

    fn strings(&self, v: &Spanned<DeValue<'_>>, key: &str) -> Result<Vec<String>, PlanError> {
        match v.get_ref() {
            DeValue::String(s) => Ok(vec![s.to_string()]),
            DeValue::Array(items) => items.iter().map(|i| self.string(i, key)).collect(),
            _ => Err(self.error(v.span().start, format!("`{key}` must be a string or a list of strings"))),
        }
    }

    fn commands(&self, v: &Spanned<DeValue<'_>>, key: &str) -> Result<Vec<String>, PlanError> {
        self.strings(v, key)
    }

    /// An array of tables (`[[test]]`), each with where it starts.
    fn tables<'a, 'i>(
        &self,
        v: &'a Spanned<DeValue<'i>>,
        key: &str,
    ) -> Result<Vec<(&'a DeTable<'i>, usize)>, PlanError> {
        let bad = || self.error(v.span().start, format!("`{key}` must be tables: [[{key}]]"));
        match v.get_ref() {
            DeValue::Array(items) => items
                .iter()
                .map(|i| i.get_ref().as_table().map(|t| (t, i.span().start)).ok_or_else(bad))
                .collect(),
            DeValue::Table(t) => Ok(vec![(t, v.span().start)]),
            _ => Err(bad()),
        }
    }

    fn value(&self, v: &Spanned<DeValue<'_>>, option: &str) -> Result<OptionValue, PlanError> {
        let scalar = |v: &Spanned<DeValue<'_>>| -> Result<String, PlanError> {
            match v.get_ref() {
                DeValue::String(s) => Ok(s.to_string()),
                DeValue::Integer(i) => integer_text(i.as_str(), i.radix())
                    .ok_or_else(|| self.error(v.span().start, format!("`{option}`: {} is not a number", i.as_str()))),
                DeValue::Float(f) => Ok(f.as_str().replace('_', "")),
                _ => Err(self.error(
                    v.span().start,
                    format!(
                        "`{option}` takes a string, a number or true/false, not {}",
                        v.get_ref().type_str()
                    ),
                )),
            }
        };
        match v.get_ref() {
            DeValue::Boolean(b) => Ok(OptionValue::Switch(*b)),
            DeValue::Array(items) => Ok(OptionValue::Many(items.iter().map(scalar).collect::<Result<_, _>>()?)),
            _ => Ok(OptionValue::One(scalar(v)?)),
        }
    }

    /// The options of a table, leaving out `reserved` keys, in the order written.
    fn settings(&self, table: &DeTable<'_>, reserved: &[&str]) -> Result<Vec<Setting>, PlanError> {
        let mut out = Vec::new();
        for (key, value) in table {
            let name = key.get_ref().as_ref();
            if reserved.contains(&name) {
                continue;
            }
            if name.is_empty() || name.starts_with('-') {
                return Err(self.error(
                    key.span().start,
                    format!("`{name}`: name an option without dashes, as `length` for --length"),
                ));
            }
            if value.get_ref().is_table() {
                return Err(self.error(
                    key.span().start,
                    format!("`{name}` is a table; an option takes a value"),
                ));
            }
            out.push(Setting {
                option: name.to_string(),
                value: self.value(value, name)?,
                at: self.at(key.span().start),
            });
        }
        out.sort_by_key(|s| (s.at.line, s.at.column));
        Ok(out)
    }

    fn settings_of(&self, v: &Spanned<DeValue<'_>>, key: &str, reserved: &[&str]) -> Result<Vec<Setting>, PlanError> {
        let table = v
            .get_ref()
            .as_table()
            .ok_or_else(|| self.error(v.span().start, format!("`{key}` must be a table of options")))?;
        self.settings(table, reserved)
    }

    fn test(&self, t: &DeTable<'_>, start: usize) -> Result<PlanTest, PlanError> {
        let kind = match t.get("kind") {
            None => return Err(self.error(start, "a [[test]] needs `kind` (tcp, udp, rr or http)")),
            Some(v) => match self.string(v, "kind")?.as_str() {
                "tcp" => Kind::Tcp,
                "udp" => Kind::Udp,
                "rr" => Kind::Rr,
                "http" => Kind::Http,
                other => {
                    return Err(self.error(
                        v.span().start,
                        format!("kind `{other}` is not one of tcp, udp, rr, http"),
                    ));
                }
            },
        };
        let name = match t.get("name") {
            Some(v) => self.string(v, "name")?,
            None => kind.name().to_string(),
        };
        let mut given: Vec<_> = TARGET_KEYS.iter().filter_map(|k| Some((k, t.get(*k)?))).collect();
        given.sort_by_key(|(_, v)| v.span().start);
        if let Some((_, second)) = given.get(1) {
            return Err(self.error(
                second.span().start,
                format!("test `{name}` names its targets twice: give one of `targets`, `hosts`, `to`"),
            ));
        }
        let targets = given.first().map(|(k, v)| self.strings(v, k)).transpose()?;
        let vary = match t.get("vary") {
            None => Vec::new(),
            Some(v) => self.vary(v)?,
        };
        let variants = match t.get("variant") {
            None => Vec::new(),
            Some(v) => self
                .tables(v, "test.variant")?
                .into_iter()
                .map(|(vt, at)| self.variant(vt, at))
                .collect::<Result<Vec<_>, _>>()?,
        };
        let mut seen = std::collections::BTreeSet::new();
        for v in &variants {
            if !seen.insert(v.name.as_str()) {
                return Err(PlanError {
                    at: v.at,
                    message: format!("two variants of test `{name}` are named `{}`", v.name),
                });
            }
        }
        let targets = targets.unwrap_or_default();
        // A test of named pairs (`pairs = [...]`) needs no other targets.
        if !t.contains_key("pairs")
            && (targets.is_empty() && variants.iter().any(|v| v.targets.is_none())
                || targets.is_empty() && variants.is_empty())
        {
            return Err(self.error(start, format!("test `{name}` names no `targets`")));
        }
        let mut settings = self.settings(t, TEST_KEYS)?;
        if let Some(v) = t.get("pairs") {
            settings.push(self.pairs(v, t)?);
            settings.sort_by_key(|s| (s.at.line, s.at.column));
        }
        if let Some(s) = settings.iter().find(|s| s.option == "pattern") {
            let known = match &s.value {
                OptionValue::One(p) => p.parse::<linerate_wire::result::Pattern>().map(|_| ()),
                other => Err(format!("`pattern` takes one name, not {other}")),
            };
            known.map_err(|message| PlanError { at: s.at, message })?;
        }
        for v in &vary {
            if let Some(s) = settings.iter().find(|s| same_option(&s.option, &v.option)) {
                return Err(PlanError {
                    at: s.at,
                    message: format!("`{}` is both set and varied in test `{name}`", s.option),
                });
            }
        }
        Ok(PlanTest {
            name,
            kind,
            targets,
            settings,
            vary,
            variants,
            setup: t.get("setup").map_or(Ok(Vec::new()), |v| self.commands(v, "setup"))?,
            teardown: t
                .get("teardown")
                .map_or(Ok(Vec::new()), |v| self.commands(v, "teardown"))?,
            at: self.at(start),
        })
    }

    /// `pairs = [["A", "B"], ...]`: the `--pair A,B` options.
    fn pairs(&self, v: &Spanned<DeValue<'_>>, t: &DeTable<'_>) -> Result<Setting, PlanError> {
        let bad = |at: usize| {
            self.error(
                at,
                "`pairs` takes a list of pairs: pairs = [[\"h1\", \"h2\"], [\"h3\", \"h4\"]]",
            )
        };
        let DeValue::Array(items) = v.get_ref() else {
            return Err(bad(v.span().start));
        };
        let mut out = Vec::new();
        for item in items {
            let DeValue::Array(two) = item.get_ref() else {
                return Err(bad(item.span().start));
            };
            let names = two
                .iter()
                .map(|n| self.string(n, "pairs"))
                .collect::<Result<Vec<_>, _>>()?;
            match &names[..] {
                [a, b] if !a.is_empty() && !b.is_empty() && !a.contains(',') && !b.contains(',') => {
                    out.push(format!("{a},{b}"))
                }
                _ => return Err(bad(item.span().start)),
            }
        }
        let key = t.get_key_value("pairs").map_or(v.span().start, |(k, _)| k.span().start);
        Ok(Setting {
            option: "pair".into(),
            value: OptionValue::Many(out),
            at: self.at(key),
        })
    }

    fn vary(&self, v: &Spanned<DeValue<'_>>) -> Result<Vec<Vary>, PlanError> {
        let table = v.get_ref().as_table().ok_or_else(|| {
            self.error(
                v.span().start,
                "`vary` must be a table: vary = { length = [\"4K\", \"64K\"] }",
            )
        })?;
        let mut out = Vec::new();
        for (key, value) in table {
            let option = key.get_ref().to_string();
            let at = key.span().start;
            let values = match value.get_ref() {
                DeValue::String(s) if s.contains(':') => expand_range(s)
                    .map_err(|m| self.error(value.span().start, format!("vary `{option}`: {m}")))?
                    .into_iter()
                    .map(OptionValue::One)
                    .collect(),
                DeValue::Array(items) => items
                    .iter()
                    .map(|i| self.value(i, &option))
                    .collect::<Result<Vec<_>, _>>()?,
                _ => {
                    return Err(self.error(
                        value.span().start,
                        format!("vary `{option}` takes a list of values or a range \"A:B:STEP\""),
                    ));
                }
            };
            if values.is_empty() {
                return Err(self.error(value.span().start, format!("vary `{option}` has no values")));
            }
            out.push(Vary {
                option,
                values,
                at: self.at(at),
            });
        }
        out.sort_by_key(|v| (v.at.line, v.at.column));
        Ok(out)
    }

    fn variant(&self, t: &DeTable<'_>, start: usize) -> Result<Variant, PlanError> {
        let name = match t.get("name") {
            Some(v) => self.string(v, "name")?,
            None => return Err(self.error(start, "a [[test.variant]] needs a `name`")),
        };
        Ok(Variant {
            name,
            targets: t.get("targets").map(|v| self.strings(v, "targets")).transpose()?,
            settings: self.settings(t, VARIANT_KEYS)?,
            profile: t.get("profile").map(|v| self.string(v, "profile")).transpose()?,
            at: self.at(start),
        })
    }
}

/// `peer_cpus` and `peer-cpus` name the same flag.
pub fn same_option(a: &str, b: &str) -> bool {
    a.replace('_', "-") == b.replace('_', "-")
}

/// A TOML integer's decimal text (`0x10` is 16; `1_000` is 1000).
fn integer_text(text: &str, radix: u32) -> Option<String> {
    let digits = text.replace('_', "");
    let (negative, digits) = match digits.strip_prefix('-') {
        Some(d) => (true, d.to_string()),
        None => (false, digits.strip_prefix('+').unwrap_or(&digits).to_string()),
    };
    let body = if radix == 10 { digits.as_str() } else { digits.get(2..)? };
    let n = i128::from_str_radix(body, radix).ok()?;
    Some(if negative { (-n).to_string() } else { n.to_string() })
}

/// The candidate closest to `word` by edit distance, when it is close enough to be a typo.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests;
