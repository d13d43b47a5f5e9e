//! The binary's side of the one device opener, [`tegula_open`]: the same calls, with what
//! the opener reports printed on stderr (`warning: PATH: …` for a problem that did not stop
//! the open; a note when a read-only command read an image past the process writing it).

use anyhow::Result;
use std::sync::Arc;
use tegula_device::{Disk, ZonedDevice};
use tegula_open::Opening;

pub use tegula_open::{kind_of, Access, Opened, PathKind, Spec};

/// Prints what `o` reports and gives its device.
fn told<D>(o: Opening<D>, spec: &Spec) -> D {
    for w in &o.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(holder) = &o.held_by {
        eprintln!(
            "note: {} is in use by {holder}; the figures are as of its last flush",
            spec.path.display()
        );
    }
    o.device
}

/// Opens whatever `spec.path` names ([`tegula_open::open`]), printing its warnings.
pub fn open(spec: &Spec) -> Result<Opened> {
    Ok(told(tegula_open::open(spec)?, spec))
}

/// Opens `spec` as a zoned device ([`tegula_open::open_zoned`]), printing its warnings.
pub fn open_zoned(spec: &Spec) -> Result<Arc<dyn ZonedDevice>> {
    Ok(told(tegula_open::open_zoned(spec)?, spec))
}

/// Opens the disk image `spec.path` as the raw drive, even one formatted drive-managed IMR
/// ([`tegula_open::open_raw_disk`]); its open warnings are not printed (the commands that
/// use it describe the image themselves).
pub fn open_raw_disk(spec: &Spec) -> Result<Disk> {
    let o = tegula_open::open_raw_disk(spec)?;
    Ok(told(
        Opening {
            warnings: Vec::new(),
            ..o
        },
        spec,
    ))
}
