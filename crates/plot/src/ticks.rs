//! Tick positions and their labels: 1-2-5 steps, `500` not `500.0`, `20k`, quantiles.

/// A step of 1, 2 or 5 times a power of ten: `mantissa × 10^exponent`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Step {
    pub(crate) mantissa: u32,
    pub(crate) exponent: i32,
}

impl Step {
    /// The smallest 1-2-5 step that cuts `span` into at most `max` intervals.
    pub(crate) fn for_span(span: f64, max: usize) -> Step {
        let raw = (span / max.max(1) as f64).abs().max(f64::MIN_POSITIVE);
        let mut exponent = raw.log10().floor() as i32;
        loop {
            for mantissa in [1, 2, 5] {
                let s = Step { mantissa, exponent };
                if s.value() >= raw * (1.0 - 1e-9) {
                    return s;
                }
            }
            exponent += 1;
        }
    }

    /// `k` steps, computed so that the result is the double nearest the decimal value.
    pub(crate) fn times(self, k: i64) -> f64 {
        let m = (k * i64::from(self.mantissa)) as f64;
        if self.exponent >= 0 {
            m * 10f64.powi(self.exponent)
        } else {
            m / 10f64.powi(-self.exponent)
        }
    }

    pub(crate) fn value(self) -> f64 {
        self.times(1)
    }
}

/// Labels for linear-axis ticks `step` apart: one number of decimals for the whole axis (as
/// few as the step needs: none for integers), and `k`, `M`, `G` once the largest tick reaches
/// ten thousand.
pub fn format_ticks(ticks: &[f64], step: f64) -> Vec<String> {
    let top = ticks.iter().fold(0.0f64, |m, t| m.max(t.abs()));
    let (div, suffix) = scale_suffix(top);
    let decimals = decimals_for(step / div);
    ticks
        .iter()
        .map(|&t| {
            let s = format!("{:.*}", decimals, t / div);
            let s = if s
                .trim_start_matches('-')
                .chars()
                .all(|c| c == '0' || c == '.')
            {
                "0".to_string()
            } else {
                s
            };
            if s == "0" {
                s
            } else {
                format!("{s}{suffix}")
            }
        })
        .collect()
}

/// One value as a short label: `0.05`, `300`, `2500`, `20k`, `1.5M` (at most four
/// significant digits).
pub fn format_value(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let (div, suffix) = scale_suffix(v.abs());
    let x: f64 = format!("{:.3e}", v / div).parse().unwrap_or(v / div);
    if x == 0.0 {
        "0".to_string()
    } else {
        format!("{x}{suffix}")
    }
}

pub(crate) fn scale_suffix(top: f64) -> (f64, &'static str) {
    if top >= 1e9 {
        (1e9, "G")
    } else if top >= 1e6 {
        (1e6, "M")
    } else if top >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    }
}

/// Decimals needed to print multiples of `step` exactly (0 for a step of 1 or more).
pub(crate) fn decimals_for(step: f64) -> usize {
    let mut d = 0;
    while d < 9 {
        let scaled = step * 10f64.powi(d as i32);
        if (scaled - scaled.round()).abs() < 1e-6 * scaled.abs().max(1.0) {
            break;
        }
        d += 1;
    }
    d
}

/// The `p`-quantile (0..=1) of sorted values (nearest rank).
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = (p.clamp(0.0, 1.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i]
}
