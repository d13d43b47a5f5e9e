//! The physical limit every device-time figure must respect: a drive cannot make user data
//! durable faster than its media transfers it. A benchmark whose writes are durable at the end
//! of its device time (the final flush counted) is checked against the fastest raw media rate
//! of the zones it wrote ([`crate::KvEngine::media_limit`]); a result above it is a bug in the
//! drive model or in the accounting, and is flagged in the output and the JSON, and fails the
//! run. Results whose device time leaves writes not yet durable are never compared to the
//! limit (their `device_time_durable` is false).

use serde::{Deserialize, Serialize};

/// Relative slack for floating-point rounding: a result within one part in a million of the
/// limit passes.
const SLACK: f64 = 1e-6;

/// User bytes per device second against the media's rate where they were written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MediaCheck {
    /// The fastest raw media rate of the zones written, in MB/s (10^6 bytes).
    pub limit_mb_per_sec: f64,
    /// Key and value bytes per modelled device second, in MB/s (10^6 bytes).
    pub user_mb_per_device_sec: f64,
    /// Whether the user rate is within the limit.
    pub ok: bool,
}

impl MediaCheck {
    /// The check of `user_bytes` made durable in `device_seconds` against a media rate of
    /// `limit_bytes_per_sec`.
    pub fn new(user_bytes: u64, device_seconds: f64, limit_bytes_per_sec: f64) -> Self {
        let user = if device_seconds > 0.0 {
            user_bytes as f64 / device_seconds
        } else if user_bytes == 0 {
            0.0
        } else {
            f64::INFINITY
        };
        MediaCheck {
            limit_mb_per_sec: limit_bytes_per_sec / 1e6,
            user_mb_per_device_sec: user / 1e6,
            ok: user <= limit_bytes_per_sec * (1.0 + SLACK),
        }
    }

    /// The line printed for a result above the limit.
    pub fn violation(&self) -> Option<String> {
        (!self.ok).then(|| {
            format!(
                "ABOVE THE MEDIA LIMIT: {:.1} MB of user data per device second, but the media \
                 can write at most {:.1} MB/s where this benchmark wrote (a modelling or \
                 accounting bug)",
                self.user_mb_per_device_sec, self.limit_mb_per_sec
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_above_the_media_is_flagged_and_one_below_passes() {
        let ok = MediaCheck::new(200_000_000, 1.0, 250e6);
        assert!(ok.ok && ok.violation().is_none());
        assert!((ok.user_mb_per_device_sec - 200.0).abs() < 1e-9);
        let bad = MediaCheck::new(300_000_000, 1.0, 250e6);
        assert!(!bad.ok);
        assert!(bad.violation().expect("flagged").contains("300.0"));
        // Durable writes that took no device time at all are impossible.
        assert!(!MediaCheck::new(1, 0.0, 250e6).ok);
        assert!(MediaCheck::new(0, 0.0, 250e6).ok);
    }
}
