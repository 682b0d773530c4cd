//! From data values to positions on an axis, and where its ticks go: linear axes tick at
//! 1, 2 or 5 x 10^k steps, log axes at each decade (with 2 and 5 between when the axis spans
//! fewer than three decades).

use super::{Axis, Scale};

/// An axis fitted to its data: the value range drawn and the pixel range it maps onto.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mapping {
    pub scale: Scale,
    pub lo: f64,
    pub hi: f64,
    /// Pixel positions of `lo` and `hi` (for y, `from` is the bottom).
    pub from: f64,
    pub to: f64,
}

impl Mapping {
    /// The axis over `values` (non-finite values, and non-positive ones on a log axis, ignored),
    /// drawn between pixels `from` and `to`.
    pub fn fit(axis: &Axis, values: &[f64], from: f64, to: f64) -> Mapping {
        let usable = |v: &f64| v.is_finite() && (axis.scale == Scale::Linear || *v > 0.0);
        let mut lo = values.iter().copied().filter(usable).fold(f64::INFINITY, f64::min);
        let mut hi = values.iter().copied().filter(usable).fold(f64::NEG_INFINITY, f64::max);
        if !lo.is_finite() {
            (lo, hi) = if axis.scale == Scale::Log {
                (1.0, 10.0)
            } else {
                (0.0, 1.0)
            };
        }
        match axis.scale {
            Scale::Linear => {
                if lo > 0.0 && axis.min.is_none() {
                    lo = 0.0;
                }
                if hi <= lo {
                    hi = lo + if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
                }
                let step = nice_step((hi - lo) / 5.0);
                lo = (lo / step).floor() * step;
                hi = (hi / step).ceil() * step;
            }
            Scale::Log => {
                // A decade below a lowest value that is itself a power of ten, so a bar of it
                // still has a height.
                lo = 10f64.powf((lo.log10() - 1e-3).floor());
                hi = 10f64.powf(hi.log10().ceil());
                if hi <= lo {
                    hi = lo * 10.0;
                }
            }
        }
        if let Some(m) = axis.min {
            lo = m;
        }
        if let Some(m) = axis.max {
            hi = m;
        }
        if hi <= lo {
            hi = lo + 1.0;
        }
        Mapping {
            scale: axis.scale,
            lo,
            hi,
            from,
            to,
        }
    }

    /// A y axis over `values`: as [`Mapping::fit`], and on a linear axis without a fixed top the
    /// range ends a step above `marked` (the highest point drawn with a marker or an error bar)
    /// when that would touch the plot's top border: headroom for the points and their markers
    /// (a bar may reach the border, a marker would be cut by it).
    pub fn fit_y(axis: &Axis, values: &[f64], marked: f64, from: f64, to: f64) -> Mapping {
        let mut m = Mapping::fit(axis, values, from, to);
        let top = marked;
        if m.scale == Scale::Linear && axis.max.is_none() && top.is_finite() && top > m.lo {
            let step = nice_step((m.hi - m.lo) / 5.0);
            if m.hi - top < 0.04 * (m.hi - m.lo) {
                m.hi = clean(m.hi + step);
            }
        }
        m
    }

    /// Pixel position of `v`; None when a log axis cannot show it (zero or below) or `v` is not
    /// finite.
    pub fn at(&self, v: f64) -> Option<f64> {
        let t = match self.scale {
            Scale::Linear => (v - self.lo) / (self.hi - self.lo),
            Scale::Log if v > 0.0 => (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10()),
            Scale::Log => return None,
        };
        t.is_finite().then_some(self.from + t * (self.to - self.from))
    }

    /// The position of `v`, clamped to the axis (a bar's floor, a band's edge).
    pub fn clamped(&self, v: f64) -> f64 {
        let v = match self.scale {
            Scale::Log if v <= 0.0 => self.lo,
            _ => v.clamp(self.lo, self.hi),
        };
        self.at(v).unwrap_or(self.from)
    }

    /// The tick values between `lo` and `hi`.
    pub fn ticks(&self) -> Vec<f64> {
        match self.scale {
            Scale::Linear => {
                let step = nice_step((self.hi - self.lo) / 5.0);
                let first = (self.lo / step).ceil() as i64;
                let last = (self.hi / step).floor() as i64;
                (first..=last).map(|i| clean(i as f64 * step)).collect()
            }
            Scale::Log => {
                let (a, b) = (self.lo.log10().floor() as i32, self.hi.log10().ceil() as i32);
                let between: &[f64] = if b - a < 3 { &[1.0, 2.0, 5.0] } else { &[1.0] };
                (a..=b)
                    .flat_map(|e| between.iter().map(move |m| m * 10f64.powi(e)))
                    .map(clean)
                    .filter(|v| *v >= self.lo * (1.0 - 1e-9) && *v <= self.hi * (1.0 + 1e-9))
                    .collect()
            }
        }
    }
}

/// 1, 2 or 5 x 10^k, the smallest at or above `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let m = raw / mag;
    let nice = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// Rounds away float noise (0.30000000000000004 -> 0.3).
fn clean(v: f64) -> f64 {
    if v == 0.0 {
        return 0.0;
    }
    let digits = 12 - v.abs().log10().ceil() as i32;
    let p = 10f64.powi(digits.clamp(0, 300));
    (v * p).round() / p
}

/// A tick label: up to four significant digits, thousands grouped, no trailing zeros;
/// 10^6 and more as 1e6 style.
pub fn label(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e7).contains(&a) {
        let e = a.log10().floor() as i32;
        let m = v / 10f64.powi(e);
        let m = format!("{m:.2}");
        let m = m.trim_end_matches('0').trim_end_matches('.');
        return format!("{m}e{e}");
    }
    let decimals = if a == 0.0 || a >= 1000.0 {
        0
    } else {
        (3 - a.log10().floor() as i32).clamp(0, 6) as usize
    };
    let s = crate::text::grouped(v, decimals);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_axis_starts_at_zero_and_ticks_in_nice_steps() {
        let m = Mapping::fit(&Axis::linear("x", ""), &[3.0, 97.0], 0.0, 100.0);
        assert_eq!((m.lo, m.hi), (0.0, 100.0));
        assert_eq!(m.ticks(), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(m.at(50.0), Some(50.0));
    }

    #[test]
    fn y_mapping_runs_bottom_to_top() {
        let m = Mapping::fit(&Axis::linear("y", ""), &[0.0, 10.0], 300.0, 100.0);
        assert_eq!(m.at(0.0), Some(300.0));
        assert_eq!(m.at(10.0), Some(100.0));
    }

    #[test]
    fn log_axis_ticks_at_decades_and_leaves_out_zero() {
        let m = Mapping::fit(&Axis::log("size", "bytes"), &[0.0, 64.0, 65536.0], 0.0, 400.0);
        assert_eq!((m.lo, m.hi), (10.0, 100_000.0));
        assert_eq!(m.ticks(), [10.0, 100.0, 1000.0, 10_000.0, 100_000.0]);
        assert_eq!(m.at(0.0), None);
        assert!((m.at(1000.0).expect("on the axis") - 200.0).abs() < 1e-9);
    }

    #[test]
    fn a_log_axis_reaches_below_a_power_of_ten() {
        let m = Mapping::fit(&Axis::log("count", ""), &[1.0, 5000.0], 100.0, 0.0);
        assert_eq!((m.lo, m.hi), (0.1, 10_000.0));
        assert!(m.at(1.0).expect("on the axis") < 100.0);
    }

    #[test]
    fn short_log_axis_ticks_at_1_2_5() {
        let m = Mapping::fit(&Axis::log("gap", "µs"), &[2.0, 50.0], 0.0, 1.0);
        assert_eq!(m.ticks(), [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]);
    }

    #[test]
    fn fitting_picks_log_over_two_decades() {
        assert_eq!(Axis::fitting("s", "bytes", &[64.0, 65536.0]).scale, Scale::Log);
        assert_eq!(Axis::fitting("s", "bytes", &[64.0, 1500.0]).scale, Scale::Linear);
        assert_eq!(Axis::fitting("s", "bytes", &[0.0, 65536.0]).scale, Scale::Linear);
    }

    #[test]
    fn steps_are_1_2_5() {
        assert_eq!(nice_step(0.13), 0.2);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7000.0), 10_000.0);
    }

    #[test]
    fn labels_are_short() {
        assert_eq!(label(0.0), "0");
        assert_eq!(label(0.5), "0.5");
        assert_eq!(label(12_000.0), "12,000");
        assert_eq!(label(2.5e9), "2.5e9");
        assert_eq!(label(0.3 + 0.0000000001), "0.3");
    }

    #[test]
    fn issue_23_a_y_axis_ends_above_its_highest_value() {
        // Runs at 1000 Mbit/s would sit on the top border of a 0..1000 axis.
        let m = Mapping::fit_y(&Axis::linear("y", ""), &[990.0, 1000.0], 1000.0, 300.0, 0.0);
        assert_eq!((m.lo, m.hi), (0.0, 1200.0));
        assert!(m.at(1000.0).expect("on the axis") > 0.0, "below the top border");
        // With room to spare, the range stays where the ticks put it.
        let m = Mapping::fit_y(&Axis::linear("y", ""), &[0.0, 940.0], 940.0, 300.0, 0.0);
        assert_eq!(m.hi, 1000.0);
        // Bars may reach the top: 100 % busy is the whole axis.
        let m = Mapping::fit_y(&Axis::linear("busy", "%"), &[0.0, 100.0], f64::NEG_INFINITY, 300.0, 0.0);
        assert_eq!(m.hi, 100.0);
        // A fixed top is kept.
        let m = Mapping::fit_y(&Axis::linear("y", "%").with_max(100.0), &[100.0], 100.0, 300.0, 0.0);
        assert_eq!(m.hi, 100.0);
    }

    #[test]
    fn empty_data_still_gives_an_axis() {
        let m = Mapping::fit(&Axis::linear("x", ""), &[], 0.0, 10.0);
        assert!(m.hi > m.lo);
        assert!(!m.ticks().is_empty());
    }
}
