//! `disk conformance`: the zone rules every tegula layer relies on, checked on a zoned disk
//! image or a real zoned block device (`tegula_device::conformance`). It destroys the data of
//! every zone.

use super::{open_zoned, Access, ImageArg};
use crate::output;
use anyhow::{bail, Result};
use clap::Args;
use tegula_device::conformance::{self, Outcome};
use tegula_device::ZonedDevice;

/// Arguments of `disk conformance`.
#[derive(Debug, Args)]
pub struct ConformanceArgs {
    #[command(flatten)]
    img: ImageArg,
    /// Confirm that every zone's data may be destroyed (the checks write and reset zones).
    #[arg(long)]
    destroys_data: bool,
    /// Print the checks as JSON on stdout.
    #[arg(long)]
    json: bool,
}

/// Runs `disk conformance`; fails when any check fails.
pub fn run(a: ConformanceArgs) -> Result<()> {
    if !a.destroys_data {
        bail!(
            "the conformance checks write and reset every zone of {}, destroying its data: add \
             --destroys-data",
            a.img.image.display()
        );
    }
    let handle = open_zoned(&a.img.image, Access::ReadWrite)?;
    let dev: &dyn ZonedDevice = handle.dev();
    let json = a.json;
    let checks = conformance::run(dev, |c| {
        if json {
            return;
        }
        let (mark, text) = match &c.outcome {
            Outcome::Passed(t) => ("pass", t),
            Outcome::Failed(t) => ("FAIL", t),
            Outcome::NotApplicable(t) => ("n/a ", t),
        };
        println!("{mark}  {:<24} {text}", c.name);
    });
    let closed = handle.close(&a.img.image);
    let failed = checks.iter().filter(|c| c.failed()).count();
    if json {
        output::print_json(&checks)?;
    } else {
        let passed = checks
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Passed(_)))
            .count();
        println!(
            "{passed} passed, {failed} failed, {} not applicable",
            checks.len() - passed - failed
        );
    }
    closed?;
    if failed > 0 {
        bail!(
            "{failed} zone rule{} not kept by {}",
            if failed == 1 { "" } else { "s" },
            a.img.image.display()
        );
    }
    Ok(())
}
