//! Checking a dm-smr image without modifying it (`tegula disk check`): the header, both
//! drive-state slots, both metadata checkpoints and every record of the current generation
//! (a damaged record followed by valid ones is corruption), the bounds of every decoded
//! record, and whether the media's damage map agrees with the map: no live data may sit on
//! sectors that read back as media errors, except where a band overwritten in place was torn
//! by a power cut (journal drives with the volatile cache on, Skylight TEST 13).

use crate::drive::DmDrive;
use crate::error::{Result, StlError};
use std::path::Path;
use tegula_device::DeviceError;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Worth knowing, nothing wrong (a torn tail left by a crash).
    Note,
    /// Something was lost or passed over, but the drive is consistent (a damaged state slot).
    Warning,
    /// The image is corrupt or inconsistent: reads may fail or return wrong data.
    Error,
}

/// One thing a check found, worded for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How much it matters.
    pub severity: Severity,
    /// What, and where (slot, offset, LBA).
    pub message: String,
}

impl Finding {
    /// A finding of `severity`.
    pub fn new(severity: Severity, message: impl Into<String>) -> Self {
        Finding {
            severity,
            message: message.into(),
        }
    }
}

/// What [`check_image`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Every finding, notes included, in the order found.
    pub findings: Vec<Finding>,
}

impl CheckReport {
    /// Whether nothing of [`Severity::Error`] was found.
    pub fn is_clean(&self) -> bool {
        self.errors().next().is_none()
    }

    /// The findings of [`Severity::Error`].
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
    }
}

/// Checks the dm-smr image at `path` without modifying it (it is opened read-only, under a
/// shared lock). A damaged or inconsistent image is a report with errors; `Err` only when the
/// image cannot be examined at all (locked by a writer, unreadable).
pub fn check_image(path: &Path) -> Result<CheckReport> {
    let mut report = CheckReport::default();
    let d = match DmDrive::open_image(path, true) {
        Ok(d) => d,
        Err(e @ StlError::Device(DeviceError::Locked { .. })) => return Err(e),
        Err(e) => {
            report
                .findings
                .push(Finding::new(Severity::Error, e.to_string()));
            return Ok(report);
        }
    };
    report.findings.extend(d.open_findings());
    report.findings.extend(d.damage_findings());
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_clean_without_errors() {
        let mut r = CheckReport::default();
        r.findings.push(Finding::new(Severity::Warning, "w"));
        assert!(r.is_clean());
        r.findings.push(Finding::new(Severity::Error, "e"));
        assert!(!r.is_clean());
        assert_eq!(r.errors().count(), 1);
    }
}
