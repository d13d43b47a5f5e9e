//! Time and size units: virtual nanoseconds and human-readable byte sizes.

use serde::{Deserialize, Deserializer, Serializer};

/// Virtual time or a duration, in nanoseconds.
pub type Nanos = u64;

/// Nanoseconds in one millisecond.
pub const MS: Nanos = 1_000_000;
/// Nanoseconds in one second.
pub const SEC: Nanos = 1_000_000_000;

/// Converts milliseconds (possibly fractional) to nanoseconds, rounding to the nearest.
pub fn ms(v: f64) -> Nanos {
    (v * MS as f64).round().max(0.0) as Nanos
}

/// Why a byte size did not parse; each message quotes the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SizeError {
    /// The input does not start with a number.
    #[error("invalid size {input:?}: expected a number with an optional unit such as 4GiB")]
    Number {
        /// The input.
        input: String,
    },
    /// The unit after the number is not one of B, K/KiB, M/MiB, G/GiB, T/TiB, KB, MB, GB, TB.
    #[error("invalid size {input:?}: unknown unit {unit:?}")]
    Unit {
        /// The input.
        input: String,
        /// The unit, lower-cased.
        unit: String,
    },
    /// The size is negative, not finite or beyond `u64`.
    #[error("invalid size {input:?}: out of range")]
    Range {
        /// The input.
        input: String,
    },
}

/// Parses a byte size such as `4096`, `4KiB`, `256MiB`, `4GiB`, `1.5TB`, `8G` (binary for
/// `K/M/G/T` and `KiB..`, decimal for `KB/MB/GB/TB`).
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: f64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| SizeError::Number { input: s.into() })?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(SizeError::Unit {
                input: s.into(),
                unit: other.into(),
            })
        }
    };
    let v = num * mult as f64;
    if !v.is_finite() || v < 0.0 || v > u64::MAX as f64 {
        return Err(SizeError::Range { input: s.into() });
    }
    Ok(v.round() as u64)
}

/// Formats a byte count with a binary unit (`4.00 GiB`).
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

/// Serde helper: a byte size written as a number or a string such as `"256MiB"`.
pub mod size_serde {
    use super::*;

    /// Serializes as a plain number of bytes.
    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(*v)
    }

    /// Accepts a number of bytes or a size string.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            N(u64),
            S(String),
        }
        match Either::deserialize(d)? {
            Either::N(n) => Ok(n),
            Either::S(s) => parse_size(&s).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_and_decimal_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("4GiB"), Ok(4 << 30));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("1.5TB"), Ok(1_500_000_000_000));
        assert_eq!(
            parse_size("4XB").unwrap_err().to_string(),
            "invalid size \"4XB\": unknown unit \"xb\""
        );
        assert!(parse_size("GiB").is_err());
        assert!(parse_size("").is_err());
    }

    #[test]
    fn sizes_format_in_binary_units() {
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(4 << 30), "4.00 GiB");
    }
}
