//! `disk check`: examines an image without modifying it (shared lock, read-only): a disk
//! image's header, state slots and zone states; a dm-smr image's header, drive-state slots,
//! metadata checkpoints and every log record (a damaged record followed by valid ones is
//! corruption), and whether the damage map agrees with the translation layer's map.

use super::ImageArg;
use crate::device::{kind_of, PathKind};
use crate::output;
use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;
use tegula_stl::check::Severity;

/// Arguments of `disk check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    img: ImageArg,
    /// Print JSON: `{"clean": bool, "findings": [{"severity", "message"}]}`.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct FindingJson {
    severity: &'static str,
    message: String,
}

#[derive(Serialize)]
struct CheckJson {
    image: String,
    clean: bool,
    findings: Vec<FindingJson>,
}

/// What is wrong with the drive-managed IMR layer of an interlaced image formatted
/// drive-managed (a damaged superblock or metadata copy), read-only; nothing for other images.
fn dm_imr_findings(path: &std::path::Path) -> Result<Vec<FindingJson>> {
    let disk =
        tegula_open::open_raw_disk(&tegula_open::Spec::new(path, tegula_open::Access::ReadOnly))?
            .device;
    if !tegula_dmimr::DmImr::is_formatted(&disk) {
        return Ok(Vec::new());
    }
    Ok(
        match tegula_dmimr::DmImr::check_metadata(std::sync::Arc::new(disk)) {
            Ok(c) => c
                .damaged
                .into_iter()
                .map(|m| ("error", m))
                .chain(c.torn.into_iter().map(|m| ("warning", m)))
                .map(|(severity, m)| FindingJson {
                    severity,
                    message: format!("drive-managed IMR layer: {m}"),
                })
                .collect(),
            Err(e) => vec![FindingJson {
                severity: "error",
                message: format!("drive-managed IMR layer: {e}"),
            }],
        },
    )
}

/// Runs `disk check`; exits with status 4 (fsck's "errors left uncorrected") when an error
/// was found.
pub fn run(a: CheckArgs) -> Result<()> {
    let path = &a.img.image;
    let findings: Vec<FindingJson> = match kind_of(path) {
        PathKind::DmImage => tegula_stl::DmDrive::check(path)?
            .findings
            .into_iter()
            .map(|f| FindingJson {
                severity: match f.severity {
                    Severity::Note => "note",
                    Severity::Warning => "warning",
                    Severity::Error => "error",
                },
                message: f.message,
            })
            .collect(),
        PathKind::ZonedImage => {
            let mut f: Vec<FindingJson> = tegula_device::Disk::check_image(path)?
                .into_iter()
                .map(|m| FindingJson {
                    severity: "warning",
                    message: m,
                })
                .collect();
            f.extend(dm_imr_findings(path)?);
            f
        }
        _ => bail!("{} is not a tegula disk or dm-smr image", path.display()),
    };
    let errors = findings.iter().filter(|f| f.severity == "error").count();
    if a.json {
        output::print_json(&CheckJson {
            image: path.display().to_string(),
            clean: errors == 0,
            findings,
        })?;
    } else {
        for f in &findings {
            println!("{}: {}", f.severity, f.message);
        }
        if errors == 0 && findings.is_empty() {
            println!("{}: clean", path.display());
        } else if errors == 0 {
            let n = findings.len();
            println!(
                "{}: no errors; {n} warning{} above",
                path.display(),
                if n == 1 { "" } else { "s" }
            );
        }
    }
    // Read-only: whatever it found is left (fsck's exit status 4).
    output::CheckExit::of(errors, 0)
}
