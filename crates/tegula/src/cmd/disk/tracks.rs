//! `disk tracks`: the track-level view of an interlaced (imr) drive, and the note `disk write`
//! prints when a write to a bottom track destroyed top-track sectors.

use super::{open, Access, ImageArg};
use crate::output::{self, Align, Table};
use anyhow::{bail, Result};
use clap::Args;
use tegula_device::{Disk, TrackInfo};

/// Arguments of `disk tracks`.
#[derive(Debug, Args)]
pub struct TracksArgs {
    #[command(flatten)]
    img: ImageArg,
    /// First track to list.
    #[arg(long, value_name = "T", default_value_t = 0)]
    from: u64,
    /// Most tracks to list.
    #[arg(long, value_name = "N", default_value_t = 16)]
    count: u64,
    /// Print a JSON array of tracks (index, lba, sectors, kind, cyl, head, neighbours).
    #[arg(long)]
    json: bool,
}

/// Runs `disk tracks`.
pub fn run(a: TracksArgs) -> Result<()> {
    let disk = open(&a.img.image, Access::ReadOnly)?;
    let Some(layout) = disk.track_layout() else {
        bail!(
            "{} is a {} drive: only interlaced (imr) drives are managed by track",
            a.img.image.display(),
            disk.config().kind.name()
        );
    };
    if a.from >= layout.track_count() {
        bail!(
            "--from {} is past the last track: {} has {} tracks, 0 to {}",
            a.from,
            a.img.image.display(),
            layout.track_count(),
            layout.track_count().saturating_sub(1)
        );
    }
    let end = a.from.saturating_add(a.count).min(layout.track_count());
    let tracks: Vec<TrackInfo> = (a.from..end).filter_map(|i| layout.track(i)).collect();
    if a.json {
        return output::print_json(&tracks);
    }
    let (bottom, top) = layout.kind_counts();
    println!(
        "{}: {} tracks ({bottom} bottom, {top} top); tracks {}..{end}",
        a.img.image.display(),
        layout.track_count(),
        a.from
    );
    let mut t = Table::new(&[
        ("track", Align::Right),
        ("kind", Align::Left),
        ("lba", Align::Right),
        ("sectors", Align::Right),
        ("cyl", Align::Right),
        ("head", Align::Right),
        ("neighbours", Align::Left),
    ]);
    for x in &tracks {
        t.row(vec![
            x.index.to_string(),
            x.kind.name().into(),
            x.lba.to_string(),
            x.sectors.to_string(),
            x.cyl.to_string(),
            x.head.to_string(),
            x.neighbour_tracks()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        ]);
    }
    print!("{}", t.render());
    Ok(())
}

/// What a write of `[lba, end)` did on an interlaced drive whose counter of destroyed
/// top-track sectors stood at `destroyed_before`: `None` on other drives or when it destroyed
/// nothing.
pub fn damage_note(disk: &Disk, lba: u64, end: u64, destroyed_before: u64) -> Option<String> {
    let layout = disk.track_layout()?;
    let destroyed = disk.stats().interlace_destroyed_sectors - destroyed_before;
    if destroyed == 0 || end <= lba {
        return None;
    }
    let first = layout.track_of(lba)?.index;
    let last = layout.track_of(end - 1).map_or(first, |t| t.index);
    let damaged = disk.with_media(|m| m.shingling().destroyed().clone());
    let mut hit: Vec<u64> = (first..=last)
        .filter_map(|i| layout.track(i))
        .flat_map(|t| t.neighbours.into_iter().flatten())
        .filter_map(|n| layout.track(n))
        .filter(|t| damaged.first_in(t.lba, t.end_lba()).is_some())
        .map(|t| t.index)
        .collect();
    hit.sort_unstable();
    hit.dedup();
    let list = hit
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    Some(format!(
        "interlaced media: the write to bottom track(s) destroyed {destroyed} sectors of top \
         track(s) {list}; they read back as media errors until rewritten"
    ))
}
