//! Output helpers: aligned tables, durations and sizes, JSON, and the summaries that several
//! commands print (disk geometry, statistics).

use anyhow::{Context, Result};
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use tegula_device::{format_size, BlockDevice, Disk, Nanos, Stats, Zone};

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right.
    Left,
    /// Pad on the left (numbers).
    Right,
}

/// A plain-text table with a header row, columns separated by two spaces.
#[derive(Debug, Default)]
pub struct Table {
    headers: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(headers: &[(&str, Align)]) -> Self {
        Table {
            headers: headers.iter().map(|(h, a)| (h.to_string(), *a)).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row (missing cells are blank).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Renders the table, one line per row, each ending in a newline.
    pub fn render(&self) -> String {
        let n = self.headers.len();
        let mut width: Vec<usize> = self.headers.iter().map(|(h, _)| h.len()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        let mut line = |cells: &mut dyn Iterator<Item = &str>| {
            let mut l = String::new();
            for (i, c) in cells.enumerate().take(n) {
                if i > 0 {
                    l.push_str("  ");
                }
                let pad = width[i].saturating_sub(c.chars().count());
                match self.headers[i].1 {
                    Align::Left => {
                        l.push_str(c);
                        l.extend(std::iter::repeat_n(' ', pad));
                    }
                    Align::Right => {
                        l.extend(std::iter::repeat_n(' ', pad));
                        l.push_str(c);
                    }
                }
            }
            out.push_str(l.trim_end());
            out.push('\n');
        };
        line(&mut self.headers.iter().map(|(h, _)| h.as_str()));
        for r in &self.rows {
            let mut cells = r.iter().map(String::as_str).chain(std::iter::repeat(""));
            line(&mut cells);
        }
        out
    }
}

/// A duration in virtual nanoseconds as milliseconds with three decimals.
pub fn ms(ns: Nanos) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// A duration with a unit that suits its size (µs, ms, s).
pub fn duration(ns: Nanos) -> String {
    let v = ns as f64;
    if ns < 1_000_000 {
        format!("{:.1} µs", v / 1e3)
    } else if ns < 10_000_000_000 {
        format!("{:.3} ms", v / 1e6)
    } else {
        format!("{:.3} s", v / 1e9)
    }
}

/// A byte rate in MB/s (decimal, as drive data sheets give it).
pub fn mb_s(bytes: u64, ns: Nanos) -> f64 {
    if ns == 0 {
        0.0
    } else {
        bytes as f64 / 1e6 / (ns as f64 / 1e9)
    }
}

/// `part` of `whole` as a whole percentage, never rounding a non-zero part down to 0%.
pub fn percent(part: u64, whole: u64) -> String {
    let p = 100.0 * part as f64 / whole.max(1) as f64;
    if part > 0 && p < 1.0 {
        "<1%".into()
    } else if part < whole && p > 99.0 {
        ">99%".into()
    } else {
        format!("{p:.0}%")
    }
}

/// An error and its causes on one line, `outer: inner: …`, skipping a cause whose text the
/// line already ends with (errors that print their source in their own message).
pub fn error_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        // Some parsers' messages span lines; keep the error on one.
        let text = cause
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if line.is_empty() {
            line = text;
        } else if !line.ends_with(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}

/// Whether an error is a broken pipe on stdout (e.g. `tegula disk read … | head`).
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Prints pretty JSON to stdout.
pub fn print_json<T: Serialize + ?Sized>(v: &T) -> Result<()> {
    let s = serde_json::to_string_pretty(v).context("encoding JSON")?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{s}").context("writing to stdout")?;
    Ok(())
}

/// Prints `key: value` lines with the values aligned.
pub fn print_kv(pairs: &[(String, String)]) {
    let w = pairs.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in pairs {
        println!("{:<w$}  {v}", format!("{k}:"), w = w + 1);
    }
}

/// Counts of zones per condition, in report order: `1 not-write-pointer, 14 empty, 1 full`.
pub fn condition_counts(zones: &[Zone]) -> String {
    let mut parts = Vec::new();
    for c in tegula_device::ZoneCondition::ALL {
        let n = zones.iter().filter(|z| z.condition == c).count();
        if n > 0 {
            parts.push(format!("{n} {c}"));
        }
    }
    parts.join(", ")
}

/// The unit of addresses in a zone table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Unit {
    /// The drive's logical blocks.
    Lba,
    /// 512-byte sectors (what blkzone prints).
    Sector,
    /// Bytes.
    Byte,
}

impl Unit {
    /// `lbas` logical blocks of `sector_size` bytes in this unit.
    pub fn of(self, lbas: u64, sector_size: u32) -> u64 {
        match self {
            Unit::Lba => lbas,
            Unit::Sector => lbas * (sector_size as u64 / 512),
            Unit::Byte => lbas * sector_size as u64,
        }
    }

    /// What a number in this unit counts, for headers: `4096-byte blocks`, `512-byte
    /// sectors` or `bytes`.
    pub fn name(self, sector_size: u32) -> String {
        match self {
            Unit::Lba => format!("{sector_size}-byte blocks"),
            Unit::Sector => "512-byte sectors".into(),
            Unit::Byte => "bytes".into(),
        }
    }
}

/// The zone table of `disk report` (and `disk stats` when `bytes` is given), addresses in
/// `unit`.
pub fn zone_table(zones: &[Zone], bytes: Option<&[u64]>, unit: Unit, sector_size: u32) -> String {
    let u = |v: u64| unit.of(v, sector_size).to_string();
    // A capacity column where some zone's capacity is below its size (ZNS), as blkzone.
    let show_cap = zones.iter().any(|z| z.capacity_lba < z.len_lba);
    let mut cols = vec![
        ("zone", Align::Right),
        ("start", Align::Right),
        ("len", Align::Right),
    ];
    if show_cap {
        cols.push(("cap", Align::Right));
    }
    cols.extend([
        ("wptr", Align::Right),
        ("used", Align::Right),
        ("type", Align::Left),
        ("cond", Align::Left),
    ]);
    if bytes.is_some() {
        cols.push(("written", Align::Right));
    }
    let mut t = Table::new(&cols);
    for z in zones {
        let seq = z.zone_type.is_sequential();
        let (wp, used) = if seq {
            (
                u(z.write_pointer_lba),
                percent(z.written_sectors(), z.capacity_lba),
            )
        } else {
            ("-".into(), "-".into())
        };
        let mut row = vec![z.index.to_string(), u(z.start_lba), u(z.len_lba)];
        if show_cap {
            row.push(u(z.capacity_lba));
        }
        row.extend([
            wp,
            used,
            z.zone_type.code().to_string(),
            if z.non_seq {
                format!("{} (non-seq)", z.condition)
            } else {
                z.condition.to_string()
            },
        ]);
        if let Some(b) = bytes {
            let v = b.get(z.index as usize).copied().unwrap_or(0);
            row.push(format_size(v));
        }
        t.row(row);
    }
    t.render()
}

/// The zone-resource rows of a summary: open limit, and where they apply the active limit and
/// a zone capacity below the zone size.
pub fn zone_limits(info: &tegula_device::DeviceInfo) -> Vec<(String, String)> {
    let limit = |n: u32| {
        if n == 0 {
            "unlimited".to_string()
        } else {
            n.to_string()
        }
    };
    let mut v = vec![("max open zones".into(), limit(info.max_open_zones))];
    if info.max_active_zones > 0 {
        v.push(("max active zones".into(), limit(info.max_active_zones)));
    }
    if info.zone_capacity_sectors < info.zone_sectors {
        let ss = u64::from(info.sector_size);
        v.push((
            "zone capacity".into(),
            format!(
                "{} of each {} zone ({} sectors writable)",
                format_size(info.zone_capacity_sectors * ss),
                format_size(info.zone_sectors * ss),
                info.zone_capacity_sectors
            ),
        ));
    }
    v
}

/// Outer- and inner-diameter sectors per track and the cylinder count of a disk's media.
pub fn tracks(disk: &Disk) -> (u64, u64, u64) {
    disk.with_media(|m| {
        let g = m.mechanics().geometry();
        let cyl = g.params().cylinders;
        (cyl, g.spt_at(0), g.spt_at(cyl.saturating_sub(1)))
    })
}

/// Sectors of `disk` that read back as media errors now (shingled or interlaced damage).
pub fn destroyed_sectors(disk: &Disk) -> u64 {
    disk.with_media(|m| m.shingling().destroyed().total())
}

/// The geometry summary `disk create`, `disk info` and `demo` print.
pub fn disk_summary(disk: &Disk, path: Option<&Path>) -> Vec<(String, String)> {
    let cfg = disk.config();
    let info = disk.info();
    let ss = info.sector_size as u64;
    let (cyl, od, id) = tracks(disk);
    let rate = |spt: u64| spt as f64 * ss as f64 * cfg.media.rpm as f64 / 60.0 / 1e6;
    let seq = info.zones - info.conventional_zones;
    let kind = match cfg.kind {
        tegula_device::DriveKind::Cmr => "cmr (conventional magnetic recording, block device)",
        tegula_device::DriveKind::HmSmr => "hm-smr (host-managed SMR, zoned)",
        tegula_device::DriveKind::HaSmr => "ha-smr (host-aware SMR, zoned)",
        tegula_device::DriveKind::SmrRaw => "smr-raw (raw shingled media, block device)",
        tegula_device::DriveKind::Imr => {
            "imr (raw interlaced media, block device managed at track level)"
        }
    };
    let seq_type = cfg.seq_zone_type().name();
    let mut v: Vec<(String, String)> = vec![
        ("profile".into(), cfg.profile.clone()),
        ("kind".into(), kind.into()),
        (
            "capacity".into(),
            format!(
                "{} ({} bytes, {} sectors)",
                format_size(info.capacity_bytes()),
                info.capacity_bytes(),
                info.capacity_sectors
            ),
        ),
        ("sector size".into(), format!("{ss} B")),
        (
            "zones".into(),
            if seq == 0 {
                format!(
                    "{} x {} (all conventional: a block device)",
                    info.zones,
                    format_size(info.zone_sectors * ss)
                )
            } else {
                format!(
                    "{} x {} ({} conventional, {} {})",
                    info.zones,
                    format_size(info.zone_sectors * ss),
                    info.conventional_zones,
                    seq,
                    seq_type
                )
            },
        ),
    ];
    v.extend(zone_limits(&info));
    v.extend([
        ("rpm".into(), cfg.media.rpm.to_string()),
        ("heads".into(), cfg.media.heads.to_string()),
        (
            "cylinders".into(),
            format!(
                "{cyl} (full drive {}, span {})",
                cfg.media.cylinders,
                match cfg.span {
                    tegula_device::Span::Scaled => "scaled",
                    tegula_device::Span::Partition => "partition",
                }
            ),
        ),
        (
            "tracks".into(),
            format!(
                "OD {od} sectors/track ({:.1} MB/s), ID {id} sectors/track ({:.1} MB/s)",
                rate(od),
                rate(id)
            ),
        ),
        (
            "shingling".into(),
            if cfg.shingle.overlap_tracks <= 1 {
                "none".into()
            } else {
                format!("head overlaps {} tracks", cfg.shingle.overlap_tracks)
            },
        ),
        (
            "write cache".into(),
            if cfg.cache.write_cache {
                format!("on ({})", format_size(cfg.cache.size))
            } else {
                "off".into()
            },
        ),
        (
            "data".into(),
            if cfg.store_data {
                "stored".into()
            } else {
                "not stored (metadata-only simulation; reads return zeros)".into()
            },
        ),
    ]);
    if let (Some(l), Some(il)) = (disk.track_layout(), cfg.interlace.as_ref()) {
        let (bottom, top) = l.kind_counts();
        v.push((
            "interlace".into(),
            format!(
                "{} tracks: {bottom} bottom, {top} top (bottom/top sectors {:.3}); bottom writes \
                 {}",
                l.track_count(),
                il.bottom_top_ratio,
                if il.damage {
                    "destroy the neighbouring top tracks"
                } else {
                    "damage nothing (the CMR twin)"
                }
            ),
        ));
    }
    if let Some(p) = path {
        v.push(("image".into(), p.display().to_string()));
    }
    v
}

/// The totals block of `disk stats` and `demo`.
pub fn stats_summary(s: &Stats, now: Nanos) -> Vec<(String, String)> {
    let m = &s.mech;
    vec![
        (
            "reads".into(),
            format!(
                "{} ({}; {} cache hits)",
                s.reads,
                format_size(s.bytes_read),
                s.cache_read_hits
            ),
        ),
        (
            "writes".into(),
            format!("{} ({})", s.writes, format_size(s.bytes_written)),
        ),
        (
            "flushes / discards / zone ops".into(),
            format!("{} / {} / {}", s.flushes, s.discards, s.zone_ops),
        ),
        (
            "media reads".into(),
            format!("{} ({})", s.media_reads, format_size(s.media_bytes_read)),
        ),
        (
            "media writes".into(),
            format!(
                "{} ({}; write amplification {:.2})",
                s.media_writes,
                format_size(s.media_bytes_written),
                s.media_write_amplification()
            ),
        ),
        (
            "seeks".into(),
            format!(
                "{} (distance {} cylinders; {} head switches, {} track switches)",
                m.seeks, m.seek_distance, m.head_switches, m.track_switches
            ),
        ),
        (
            "mechanical time".into(),
            format!(
                "seek {}, rotation {}, transfer {}",
                duration(m.seek_ns),
                duration(m.rotation_ns),
                duration(m.transfer_ns)
            ),
        ),
        (
            "busy / idle".into(),
            format!("{} / {}", duration(s.busy_ns), duration(s.idle_ns)),
        ),
        ("virtual clock".into(), duration(now)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_columns() {
        let mut t = Table::new(&[("a", Align::Right), ("name", Align::Left)]);
        t.row(vec!["10".into(), "x".into()]);
        t.row(vec!["7".into(), "longer".into()]);
        assert_eq!(t.render(), " a  name\n10  x\n 7  longer\n");
    }

    #[test]
    fn error_lines_do_not_repeat_causes() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = anyhow::Error::new(tegula_device::DeviceError::io("opening x", io));
        assert_eq!(error_line(&e), "opening x: gone");
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_line(&e), "outer: inner");
    }

    #[test]
    fn durations_pick_units() {
        assert_eq!(duration(1_500), "1.5 µs");
        assert_eq!(duration(12_345_678), "12.346 ms");
        assert_eq!(duration(12_000_000_000), "12.000 s");
        assert!((mb_s(1_000_000, 1_000_000_000) - 1.0).abs() < 1e-9);
    }
}

/// How a `check` command ended, with fsck's exit codes: 0 clean, 1 errors corrected, 4 errors
/// left uncorrected. Returned as an error (the binary exits with its code after printing its
/// message); a clean check returns `Ok`.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct CheckExit {
    /// 1 (errors corrected) or 4 (errors left).
    pub code: u8,
    /// What the check says last.
    pub message: String,
}

impl CheckExit {
    /// The outcome of a check that found `problems` left and `repaired` corrected.
    pub fn of(problems: usize, repaired: usize) -> anyhow::Result<()> {
        if problems > 0 {
            return Err(CheckExit {
                code: 4,
                message: format!(
                    "{problems} problem{} left uncorrected",
                    if problems == 1 { "" } else { "s" }
                ),
            }
            .into());
        }
        if repaired > 0 {
            return Err(CheckExit {
                code: 1,
                message: format!(
                    "{repaired} error{} found and corrected",
                    if repaired == 1 { "" } else { "s" }
                ),
            }
            .into());
        }
        Ok(())
    }
}
