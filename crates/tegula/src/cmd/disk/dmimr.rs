//! `tegula disk …` on drive-managed IMR drives: formatting one at `disk create
//! --drive-managed`, and the layer's state in `disk info` and `disk stats` (read from the
//! raw drive's side: its superblock, metadata and track flags).

use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use tegula_device::{format_size, BlockDevice, Disk, DriveKind};
use tegula_dmimr::{DmImr, FormatOptions, Probe};

/// The drive-managed layer as `disk info --json` shows it.
#[derive(Debug, Serialize)]
pub struct DmImrJson {
    /// Host-visible bytes (the data tracks; the safe region and its guards are the drive's).
    pub host_capacity_bytes: u64,
    /// Host bytes at the end of the bottoms-only phase and of the alternate-tops phase.
    pub phase_ends_bytes: [u64; 2],
    /// Bottom tracks holding host data.
    pub bottom_tracks_in_use: u64,
    /// Top tracks holding host data.
    pub top_tracks_in_use: u64,
    /// Top tracks holding host data yet damaged (always 0 unless the layer has a bug).
    pub damaged_tops_in_use: usize,
}

/// Formats the just-created raw image `disk` as drive-managed and closes it.
pub fn format(disk: Disk, path: &Path) -> Result<Vec<(String, String)>> {
    if disk.config().kind != DriveKind::Imr {
        bail!(
            "--drive-managed formats an interlaced drive (a profile of kind imr, such as imr or \
             imr-paper), not a {} drive",
            disk.info().kind
        );
    }
    let dm = DmImr::format(Arc::new(disk), FormatOptions::default())
        .with_context(|| format!("formatting {} as drive-managed IMR", path.display()))?;
    let kv = summary(&dm);
    dm.close()
        .with_context(|| format!("closing {}", path.display()))?;
    Ok(kv)
}

/// The layer's state in key-value lines.
fn summary(dm: &DmImr) -> Vec<(String, String)> {
    let j = json_of(dm);
    vec![
        (
            "drive-managed".into(),
            format!(
                "IMR with three-phase track mapping and read-modify-write inside the drive: {} \
                 for the host (bottoms only up to {}, alternate tops up to {})",
                format_size(j.host_capacity_bytes),
                format_size(j.phase_ends_bytes[0]),
                format_size(j.phase_ends_bytes[1])
            ),
        ),
        (
            "tracks in use".into(),
            format!(
                "{} bottom, {} top ({} damaged)",
                j.bottom_tracks_in_use, j.top_tracks_in_use, j.damaged_tops_in_use
            ),
        ),
    ]
}

fn json_of(dm: &DmImr) -> DmImrJson {
    let ss = dm.info().sector_size as u64;
    let (b, t) = dm.tracks_in_use();
    let [p1, p2] = dm.phase_ends();
    DmImrJson {
        host_capacity_bytes: dm.info().capacity_bytes(),
        phase_ends_bytes: [p1 * ss, p2 * ss],
        bottom_tracks_in_use: b,
        top_tracks_in_use: t,
        damaged_tops_in_use: dm.damaged_valid_tops().len(),
    }
}

/// The raw drive back, and the layer on it (opened read-only), if it is formatted
/// drive-managed: its key-value lines and JSON, or a line saying why it cannot be read.
pub type Described = (Disk, Option<(Vec<(String, String)>, Option<DmImrJson>)>);

/// See [`Described`].
pub fn describe(disk: Disk) -> Result<Described> {
    let arc = Arc::new(disk);
    let out = match DmImr::probe(arc.clone()) {
        Ok(Probe::Raw(d)) => {
            drop(d);
            None
        }
        Ok(Probe::Opened(dm)) => {
            let r = (summary(&dm), Some(json_of(&dm)));
            drop(dm);
            Some(r)
        }
        Err(e) => Some((
            vec![(
                "drive-managed".into(),
                format!("IMR, but its layer cannot be read from a read-only handle: {e}"),
            )],
            None,
        )),
    };
    let disk = Arc::try_unwrap(arc)
        .map_err(|_| anyhow::anyhow!("the drive-managed layer kept the raw drive open"))?;
    Ok((disk, out))
}
