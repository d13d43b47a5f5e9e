//! `disk dump`: the raw contents of an image's header and state slots, decoded field by field.
//! Unlike the other commands it shows what it can of a damaged image before reporting the
//! damage.

use super::ImageArg;
use crate::output::{self, Align, Table};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use tegula_device::image::{decode_header, decode_state, ImageState, HEADER_REGION, IMAGE_MAGIC};
use tegula_device::{format_size, RangeSet, ZoneType};

/// Arguments of `disk dump`.
#[derive(Debug, Args)]
pub struct DumpArgs {
    #[command(flatten)]
    img: ImageArg,
    /// Print every damaged or injected range (default: the first 32 of each).
    #[arg(long)]
    all_ranges: bool,
}

fn printable(b: &[u8]) -> String {
    b.iter()
        .map(|&c| {
            if c.is_ascii_graphic() {
                (c as char).to_string()
            } else {
                format!("\\x{c:02x}")
            }
        })
        .collect()
}

fn ranges(name: &str, r: &RangeSet, all: bool) {
    println!(
        "{name}: {} range{} ({} sectors)",
        r.len(),
        if r.len() == 1 { "" } else { "s" },
        r.total()
    );
    let limit = if all { usize::MAX } else { 32 };
    for (s, e) in r.iter().take(limit) {
        println!("  LBA {s}..{e} ({} sectors)", e - s);
    }
    if r.len() > limit {
        println!("  … {} more (use --all-ranges)", r.len() - limit);
    }
}

/// Opens an image for dumping: prints its name and sizes, returns the file, its size and its
/// first `region` bytes (fewer when the file is shorter).
pub fn open_header(path: &std::path::Path, region: u64) -> Result<(File, u64, Vec<u8>)> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let meta = file
        .metadata()
        .with_context(|| format!("stat {}", path.display()))?;
    let size = meta.len();
    let mut hb = vec![0u8; region.min(size) as usize];
    file.read_exact_at(&mut hb, 0)
        .with_context(|| format!("reading {}", path.display()))?;
    println!("== {} ==", path.display());
    println!(
        "file size: {size} bytes ({}; {} allocated)",
        format_size(size),
        format_size(meta.blocks() * 512)
    );
    Ok((file, size, hb))
}

/// Runs `disk dump`.
pub fn run(a: DumpArgs) -> Result<()> {
    let path = &a.img.image;
    if super::dm::is_dm(path) {
        return super::dm::dump(path);
    }
    let (file, size, hb) = open_header(path, HEADER_REGION)?;
    let magic = &hb[..hb.len().min(8)];
    println!(
        "magic: \"{}\" ({})",
        printable(magic),
        if magic == IMAGE_MAGIC {
            "tegula disk image"
        } else {
            "NOT a tegula disk image"
        }
    );
    let header =
        decode_header(&hb).map_err(|p| anyhow::anyhow!("disk image {}: {p}", path.display()))?;
    let cfg = &header.config;
    println!("\n== header ==");
    let data_len = if cfg.store_data { cfg.capacity } else { 0 };
    output::print_kv(&[
        ("version".into(), header.version.to_string()),
        (
            "header region".into(),
            format!("0..{HEADER_REGION} (checksummed header + configuration TOML)"),
        ),
        (
            "state slot A".into(),
            format!(
                "{}..{}",
                header.state_offset,
                header.state_offset + header.slot_size
            ),
        ),
        (
            "state slot B".into(),
            format!(
                "{}..{}",
                header.state_offset + header.slot_size,
                header.state_offset + 2 * header.slot_size
            ),
        ),
        ("slot size".into(), header.slot_size.to_string()),
        (
            "data region".into(),
            if cfg.store_data {
                format!(
                    "{}..{} ({})",
                    header.data_offset,
                    header.data_offset + data_len,
                    format_size(data_len)
                )
            } else {
                format!("none (metadata only; offset {})", header.data_offset)
            },
        ),
    ]);
    println!("\n== configuration ==");
    print!("{}", cfg.to_toml());

    println!("\n== state slots ==");
    let mut best: Option<(char, ImageState)> = None;
    for (i, name) in ['A', 'B'].into_iter().enumerate() {
        let off = header.state_offset + i as u64 * header.slot_size;
        if off.saturating_add(header.slot_size) > size {
            println!("slot {name} at offset {off}: missing (file is truncated at {size} bytes)");
            continue;
        }
        let mut b = vec![0u8; header.slot_size as usize];
        if let Err(e) = file.read_exact_at(&mut b, off) {
            println!("slot {name} at offset {off}: unreadable: {e}");
            continue;
        }
        match decode_state(&b) {
            Ok(s) => {
                println!(
                    "slot {name} at offset {off}: valid, seq {}, clock {}",
                    s.seq,
                    output::duration(s.now)
                );
                if best.as_ref().is_none_or(|(_, bs)| s.seq > bs.seq) {
                    best = Some((name, s));
                }
            }
            Err(p) => println!("slot {name} at offset {off}: invalid: {p}"),
        }
    }
    let Some((slot, st)) = best else {
        bail!("disk image {}: no valid state slot", path.display());
    };
    println!("\n== state (slot {slot}, the newest valid) ==");
    output::print_kv(&[
        ("seq".into(), st.seq.to_string()),
        (
            "clock".into(),
            format!("{} ns ({})", st.now, output::duration(st.now)),
        ),
        ("zones".into(), st.zones.len().to_string()),
    ]);
    let conv = cfg.conventional_zones() as usize;
    let zs = cfg.zone_sectors();
    let mut t = Table::new(&[
        ("zone", Align::Right),
        ("start", Align::Right),
        ("wptr", Align::Right),
        ("type", Align::Left),
        ("cond", Align::Left),
        ("non-seq", Align::Left),
    ]);
    for (i, (c, ns, wp)) in st.zones.iter().enumerate() {
        let ty = if i < conv {
            ZoneType::Conventional
        } else {
            cfg.seq_zone_type()
        };
        t.row(vec![
            i.to_string(),
            (i as u64 * zs).to_string(),
            wp.to_string(),
            ty.code().to_string(),
            c.to_string(),
            if *ns { "yes".into() } else { String::new() },
        ]);
    }
    print!("{}", t.render());
    if st.zones.len() != cfg.zone_count() as usize {
        println!(
            "warning: the state has {} zones, the configuration {}",
            st.zones.len(),
            cfg.zone_count()
        );
    }
    ranges(
        "damaged (shingle-destroyed) ranges",
        &st.destroyed,
        a.all_ranges,
    );
    ranges("injected media errors", &st.injected, a.all_ranges);
    println!("\n== statistics ==");
    output::print_kv(&output::stats_summary(&st.stats, st.now));
    if size < header.data_offset + data_len {
        bail!(
            "disk image {}: truncated: {size} bytes, the configuration needs {}",
            path.display(),
            header.data_offset + data_len
        );
    }
    Ok(())
}
