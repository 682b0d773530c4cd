//! A plan expanded into its points: every test, every variant, every combination of the varied
//! options, each with the options it runs with.

use super::{Kind, OptionValue, Plan, Setting, same_option};

/// One point of a campaign: a test, a variant and the varied options' values.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Index into `Plan::tests`.
    pub test: usize,
    /// Index into the test's variants; None for a test without variants.
    pub variant: Option<usize>,
    /// The varied options and their values at this point, in the order the plan varies them.
    pub coordinates: Vec<(String, OptionValue)>,
    /// Agents or URLs.
    pub targets: Vec<String>,
    /// Every option the point runs with: the plan's defaults, then the test's, the variant's,
    /// the quick overlay (with `quick`) and last the coordinates; a later one replaces an
    /// earlier one of the same option or one it conflicts with, except that the quick overlay
    /// gives way to a conflicting option already set.
    pub settings: Vec<Setting>,
}

impl Plan {
    /// The points in the order a campaign runs them: test by test, the varied values in the
    /// plan's order (the last varied option fastest), variants side by side at each value so
    /// that a pair compared is measured close in time. `conflicts(kind, a, b)` says whether two
    /// options exclude each other (`time` and `count`): a later layer's option then replaces an
    /// earlier layer's conflicting one, as it replaces the same option.
    pub fn points(&self, quick: bool, conflicts: impl Fn(Kind, &str, &str) -> bool) -> Vec<Point> {
        let mut out = Vec::new();
        for (ti, test) in self.tests.iter().enumerate() {
            let mut combos: Vec<Vec<(String, OptionValue, super::Position)>> = vec![Vec::new()];
            for vary in &test.vary {
                combos = combos
                    .into_iter()
                    .flat_map(|c| {
                        vary.values.iter().map(move |v| {
                            let mut next = c.clone();
                            next.push((vary.option.clone(), v.clone(), vary.at));
                            next
                        })
                    })
                    .collect();
            }
            let variants: Vec<Option<usize>> = if test.variants.is_empty() {
                vec![None]
            } else {
                (0..test.variants.len()).map(Some).collect()
            };
            for combo in &combos {
                for &vi in &variants {
                    let variant = vi.map(|i| &test.variants[i]);
                    let mut settings: Vec<Setting> = Vec::new();
                    // A layer's option replaces the same option and those it conflicts
                    // with; the quick overlay only shortens: it gives way to a conflicting
                    // option already set (a test's `count` keeps its count under `time`).
                    let mut lay = |layer: &[Setting], gives_way: bool| {
                        for s in layer {
                            let clash = |e: &Setting| conflicts(test.kind, &e.option, &s.option);
                            if gives_way && settings.iter().any(|e| !same_option(&e.option, &s.option) && clash(e)) {
                                continue;
                            }
                            settings.retain(|e| !same_option(&e.option, &s.option) && !clash(e));
                            settings.push(s.clone());
                        }
                    };
                    lay(&self.defaults, false);
                    lay(&test.settings, false);
                    if let Some(v) = variant {
                        lay(&v.settings, false);
                        // The variant's agent profile is the test command's `--profile NAME`.
                        if let Some(name) = &v.profile {
                            let profile = Setting {
                                option: "profile".into(),
                                value: OptionValue::One(name.clone()),
                                at: v.at,
                            };
                            lay(std::slice::from_ref(&profile), false);
                        }
                    }
                    if quick {
                        lay(&self.quick, true);
                    }
                    let coords: Vec<Setting> = combo
                        .iter()
                        .map(|(option, value, at)| Setting {
                            option: option.clone(),
                            value: value.clone(),
                            at: *at,
                        })
                        .collect();
                    lay(&coords, false);
                    out.push(Point {
                        test: ti,
                        variant: vi,
                        coordinates: combo.iter().map(|(o, v, _)| (o.clone(), v.clone())).collect(),
                        targets: variant
                            .and_then(|v| v.targets.clone())
                            .unwrap_or_else(|| test.targets.clone()),
                        settings,
                    });
                }
            }
        }
        out
    }
}

/// `"A:B:STEP"` of plain numbers, B included: `"1:4:1"` is 1, 2, 3, 4; `"0.5:1.5:0.5"` is 0.5,
/// 1, 1.5. Values are written back as the shortest text that reads as the same number. At most
/// 10,000 values.
pub fn expand_range(text: &str) -> Result<Vec<String>, String> {
    let bad = || format!("'{text}' is not a range START:END:STEP of plain numbers (0:40:2)");
    let parts: Vec<&str> = text.split(':').map(str::trim).collect();
    let [a, b, step] = parts[..] else { return Err(bad()) };
    let (a, b, step): (f64, f64, f64) = (
        a.parse().map_err(|_| bad())?,
        b.parse().map_err(|_| bad())?,
        step.parse().map_err(|_| bad())?,
    );
    if !(a.is_finite() && b.is_finite() && step.is_finite()) || step <= 0.0 || b < a {
        return Err(format!(
            "'{text}': the step must be above 0 and the end at or above the start"
        ));
    }
    if (b - a) / step > 10_000.0 {
        return Err(format!("'{text}' has more than 10000 values"));
    }
    let n = ((b - a) / step + 1e-9).floor() as usize;
    Ok((0..=n)
        .map(|i| {
            let v = a + i as f64 * step;
            // 0.1 + 2 x 0.1 is 0.30000000000000004: round to the step's own precision.
            let v = (v * 1e9).round() / 1e9;
            format!("{v}")
        })
        .collect())
}
