//! The zone rules every tegula layer relies on, as checks that run against any
//! [`ZonedDevice`]: the emulator, a banded file, zone files, or a real Linux zoned block device
//! ([`crate::Zbd`]). Each check drives the device through one rule and compares the outcome
//! with the typed error or state the rule names (in the spirit of libzbc's numbered test
//! scripts). `tegula disk conformance` runs them on a device it is allowed to destroy; the
//! device layer's tests run them on the emulated profiles, so an emulator and a real device
//! are held to the same list.
//!
//! The checks write and reset zones: every zone's data is destroyed. Each leaves every
//! sequential zone empty.

mod checks;
mod failure;

use crate::api::ZonedDevice;
use serde::Serialize;

/// How one check ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome", content = "detail")]
pub enum Outcome {
    /// The device kept the rule; what was seen.
    Passed(String),
    /// The device broke the rule, or a command failed that should not have; what happened.
    Failed(String),
    /// The rule does not apply to this device (no conventional zones, no open limit); why.
    NotApplicable(String),
}

/// One named check and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Short kebab-case name of the rule.
    pub name: &'static str,
    /// What the rule is, in one sentence.
    pub rule: &'static str,
    /// How it ended.
    pub outcome: Outcome,
}

impl Check {
    /// Whether the check failed.
    pub fn failed(&self) -> bool {
        matches!(self.outcome, Outcome::Failed(_))
    }
}

/// Runs every check on `dev` in order, calling `progress` with each result as it ends.
/// Destroys every zone's data.
pub fn run(dev: &dyn ZonedDevice, mut progress: impl FnMut(&Check)) -> Vec<Check> {
    let mut out = Vec::new();
    for (name, rule, f) in checks::ALL {
        let outcome = match checks::reset_all(dev).and_then(|()| f(dev)) {
            Ok(o) => o,
            Err(why) => Outcome::Failed(why.to_string()),
        };
        let c = Check {
            name,
            rule,
            outcome,
        };
        progress(&c);
        out.push(c);
    }
    if let Err(why) = checks::reset_all(dev) {
        let c = Check {
            name: "final-reset",
            rule: "resetting every sequential zone leaves the device empty",
            outcome: Outcome::Failed(why.to_string()),
        };
        progress(&c);
        out.push(c);
    }
    out
}
