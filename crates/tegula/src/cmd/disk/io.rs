//! `disk write` and `disk read`: data in and out of any drive (zoned image or dm-smr image),
//! with the modelled service time. A write stops cleanly on SIGINT/SIGTERM: the drive keeps
//! (and the image records) every command that completed.

use super::ImageArg;
use crate::device::{self, Access, Opened, Spec};
use crate::{interrupt, output};
use anyhow::{bail, Context, Result};
use clap::{ArgGroup, Args};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Read, Write};
use std::path::PathBuf;
use tegula_device::{
    format_size, BlockDevice, DeviceError, Nanos, WriteFlags, ZoneCondition, ZonedDevice,
};

/// Bytes per device command for large transfers.
pub const CHUNK: usize = 1 << 20;
/// Transfers above this size show a progress bar (when stderr is a terminal).
const PROGRESS_ABOVE: u64 = 8 << 20;

/// Arguments of `disk write`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["lba", "zone"])))]
pub struct WriteArgs {
    #[command(flatten)]
    img: ImageArg,
    /// First LBA to write (must be a sequential zone's write pointer on host-managed drives).
    #[arg(long, value_name = "N")]
    lba: Option<u64>,
    /// Write at this zone's write pointer (at the start of a conventional zone).
    #[arg(long, value_name = "Z")]
    zone: Option<u32>,
    /// Input file [default: stdin].
    #[arg(long, value_name = "F")]
    file: Option<PathBuf>,
    /// Force unit access: each write is durable when it completes.
    #[arg(long)]
    fua: bool,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    json: bool,
}

fn progress(total: Option<u64>, verb: &str) -> ProgressBar {
    let show = std::io::stderr().is_terminal() && total.is_none_or(|t| t > PROGRESS_ABOVE);
    if !show {
        return ProgressBar::hidden();
    }
    match total {
        Some(t) => {
            let pb = ProgressBar::new(t);
            if let Ok(st) = ProgressStyle::with_template(
                "{msg} [{bar:40}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
            ) {
                pb.set_style(st.progress_chars("=> "));
            }
            pb.set_message(verb.to_string());
            pb
        }
        None => {
            let pb = ProgressBar::new_spinner();
            if let Ok(st) =
                ProgressStyle::with_template("{spinner} {msg} {bytes} {binary_bytes_per_sec}")
            {
                pb.set_style(st);
            }
            pb.set_message(verb.to_string());
            pb
        }
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
pub fn fill(input: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Where a write starts on a zoned drive: `--lba`, or the write pointer (start of a
/// conventional zone) of `--zone`.
fn start_lba(disk: &dyn ZonedDevice, lba: Option<u64>, zone: Option<u32>) -> Result<u64> {
    if let Some(l) = lba {
        return Ok(l);
    }
    let zi = zone.context("give --lba or --zone")?;
    let z = disk.zone(zi)?;
    if !z.zone_type.is_sequential() {
        eprintln!(
            "zone {zi} is conventional: writing at its start, LBA {}",
            z.start_lba
        );
        return Ok(z.start_lba);
    }
    if z.condition == ZoneCondition::Full || z.write_pointer_lba >= z.capacity_end_lba() {
        return Err(DeviceError::ZoneFull {
            zone: zi,
            write_pointer: z.write_pointer_lba,
            lba: z.write_pointer_lba,
        }
        .into());
    }
    Ok(z.write_pointer_lba)
}

/// Sectors a write at `lba` can take before it would cross the end of its zone's capacity
/// (a write is split there, so that a file fills a zone whatever the write pointer's
/// alignment); unlimited on a device without zones.
fn room_at(dev: Option<&dyn ZonedDevice>, lba: u64) -> Result<u64> {
    let Some(d) = dev else {
        return Ok(u64::MAX);
    };
    let zs = d.info().zone_sectors;
    if zs == 0 {
        return Ok(u64::MAX);
    }
    let Ok(z) = d.zone((lba / zs) as u32) else {
        // Past the last zone: the write's own range check names it.
        return Ok(u64::MAX);
    };
    if !z.zone_type.is_sequential() {
        return Ok(z.end_lba() - lba);
    }
    if lba >= z.capacity_end_lba() {
        bail!(
            "LBA {lba} lies past zone {}'s capacity ({} of its {} sectors end at LBA {}): \
             those sectors are never writable; the input is longer than the zone's room",
            z.index,
            z.capacity_lba,
            z.len_lba,
            z.capacity_end_lba()
        );
    }
    Ok(z.capacity_end_lba() - lba)
}

/// Fails unless sectors `lba .. lba + sectors` lie on a drive of `capacity` sectors.
fn check_range(lba: u64, sectors: u64, capacity: u64) -> Result<()> {
    match lba.checked_add(sectors) {
        Some(end) if end <= capacity => Ok(()),
        _ => bail!(
            "LBA {lba} + {sectors} sectors lies beyond the end of the drive ({capacity} sectors, \
             LBA 0..{capacity})"
        ),
    }
}

/// The JSON result of `disk write` and `disk read`.
#[derive(Debug, Default, Serialize)]
struct Transfer {
    lba_start: u64,
    lba_end: u64,
    bytes: u64,
    commands: u64,
    service_ns: Nanos,
    flush_ns: Nanos,
    padded_bytes: u64,
    interrupted: bool,
}

/// Runs `disk write`.
pub fn write(a: WriteArgs) -> Result<()> {
    let path = a.img.image.clone();
    let (mut input, total): (Box<dyn Read>, Option<u64>) = match &a.file {
        Some(f) => {
            let file = File::open(f).with_context(|| format!("opening {}", f.display()))?;
            let len = file.metadata().ok().map(|m| m.len());
            (Box::new(file), len)
        }
        None => (Box::new(std::io::stdin().lock()), None),
    };
    interrupt::install()?;
    let opened = device::open(&Spec::new(&path, Access::ReadWrite))?;
    let t0 = opened.now();
    let destroyed_before = match &opened {
        Opened::Disk(d) => d.stats().interlace_destroyed_sectors,
        _ => 0,
    };
    let result = match &opened {
        Opened::Banded(_) | Opened::ZoneFiles(_) => Err(anyhow::anyhow!("not a disk image")),
        o => match (o.as_zoned(), a.lba) {
            (Some(z), _) => start_lba(z, a.lba, a.zone)
                .and_then(|first| write_all(o.as_block(), Some(z), &a, first, &mut *input, total)),
            (None, Some(first)) => write_all(o.as_block(), None, &a, first, &mut *input, total),
            (None, None) => Err(anyhow::anyhow!(
                "{} is a {} drive without zones: give --lba",
                path.display(),
                o.as_block().info().kind
            )),
        },
    };
    let zone_note = match (opened.as_zoned(), &result) {
        (Some(d), Ok(t)) if t.lba_end > t.lba_start => zone_note(d, t.lba_end - 1, t0),
        _ => None,
    };
    let damage_note = match (&opened, &result) {
        (Opened::Disk(d), Ok(t)) => {
            super::tracks::damage_note(d, t.lba_start, t.lba_end, destroyed_before)
        }
        _ => None,
    };
    // Whatever happened, persist what the drive completed.
    let closed = opened
        .close()
        .with_context(|| format!("closing {}", path.display()));
    let t = result?;
    closed?;
    if a.json {
        output::print_json(&t)?;
    } else if let Some(n) = zone_note {
        eprintln!("{n}");
    }
    if let Some(n) = damage_note {
        eprintln!("{n}");
    }
    if t.interrupted {
        return Err(interrupt::Interrupted(format!(
            " after writing {} bytes at LBA {}..{}; the drive keeps them",
            t.bytes, t.lba_start, t.lba_end
        ))
        .into());
    }
    Ok(())
}

fn zone_note(disk: &dyn ZonedDevice, last_lba: u64, t0: Nanos) -> Option<String> {
    let info = disk.info();
    let zs = info.zone_sectors.max(1);
    let z = disk.zone((last_lba / zs) as u32).ok()?;
    z.zone_type.is_sequential().then(|| {
        format!(
            "zone {}: write pointer now at LBA {} ({}), {} of {} time",
            z.index,
            z.write_pointer_lba,
            z.condition,
            output::duration(disk.now() - t0),
            if info.wall_time { "wall" } else { "virtual" }
        )
    })
}

fn write_all(
    dev: &dyn BlockDevice,
    zoned: Option<&dyn ZonedDevice>,
    a: &WriteArgs,
    first: u64,
    input: &mut dyn Read,
    total: Option<u64>,
) -> Result<Transfer> {
    let info = dev.info();
    let ss = info.sector_size as usize;
    check_range(first, 1, info.capacity_sectors)?;
    // A sized input that cannot fit is refused before anything is written.
    if let Some(bytes) = total.filter(|&b| b > 0) {
        check_range(first, bytes.div_ceil(ss as u64), info.capacity_sectors)?;
    }
    let flags = WriteFlags { fua: a.fua };
    let pb = progress(total, "writing");
    let mut buf = vec![0u8; CHUNK];
    let mut t = Transfer {
        lba_start: first,
        lba_end: first,
        ..Transfer::default()
    };
    loop {
        if interrupt::requested() {
            t.interrupted = true;
            break;
        }
        let n = fill(input, &mut buf).context("reading input")?;
        if n == 0 {
            break;
        }
        let mut len = n;
        if n % ss != 0 {
            len = n.div_ceil(ss) * ss;
            t.padded_bytes = (len - n) as u64;
            buf[n..len].fill(0);
        }
        // Any failure from here on says what the drive already holds.
        let failed = |t: &Transfer, e: anyhow::Error| {
            pb.finish_and_clear();
            if t.bytes > 0 {
                eprintln!(
                    "wrote {} bytes at LBA {first}..{} before the failure",
                    t.bytes, t.lba_end
                );
            }
            e
        };
        check_range(t.lba_end, (len / ss) as u64, info.capacity_sectors)
            .map_err(|e| failed(&t, e))?;
        let mut off = 0;
        while off < len {
            let room = room_at(zoned, t.lba_end)
                .map_err(|e| failed(&t, e))?
                .saturating_mul(ss as u64);
            let take = (len - off).min(usize::try_from(room).unwrap_or(usize::MAX));
            let d = dev
                .write_with(t.lba_end, &buf[off..off + take], flags)
                .map_err(|e| failed(&t, e.into()))?;
            t.service_ns += d.service();
            t.commands += 1;
            let real = take.min(n.saturating_sub(off));
            t.bytes += real as u64;
            t.lba_end += (take / ss) as u64;
            pb.inc(real as u64);
            off += take;
        }
        if n < CHUNK {
            break;
        }
    }
    // The input may have ended because the signal also stopped the program feeding it.
    t.interrupted |= interrupt::requested();
    pb.finish_and_clear();
    if t.bytes == 0 && !t.interrupted {
        bail!("nothing to write: the input is empty");
    }
    if !a.fua {
        t.flush_ns = dev.flush()?.service();
    }
    if !a.json {
        let sectors = t.lba_end - first;
        let zs = info.zone_sectors;
        let zones = match (zs, sectors) {
            (0, _) | (_, 0) => String::new(),
            _ => {
                let (z0, z1) = (first / zs, (t.lba_end - 1) / zs);
                if z0 == z1 {
                    format!(" (zone {z0})")
                } else {
                    format!(" (zones {z0}..={z1})")
                }
            }
        };
        eprintln!(
            "wrote {} bytes ({sectors} sector{}) at LBA {first}..{}{zones}: {} {} in {} \
             command{}{}",
            t.bytes,
            if sectors == 1 { "" } else { "s" },
            t.lba_end,
            output::ms(t.service_ns),
            if info.wall_time {
                "measured"
            } else {
                "modelled"
            },
            t.commands,
            if t.commands == 1 { "" } else { "s" },
            if t.flush_ns > 0 {
                format!(" + flush {}", output::ms(t.flush_ns))
            } else {
                String::new()
            }
        );
        if t.padded_bytes > 0 {
            eprintln!(
                "note: the input is not a whole number of {ss}-byte sectors; padded the last \
                 sector with {} zero bytes",
                t.padded_bytes
            );
        }
    }
    Ok(t)
}

/// Arguments of `disk read`.
#[derive(Debug, Args)]
pub struct ReadArgs {
    #[command(flatten)]
    img: ImageArg,
    /// First LBA to read.
    #[arg(long, value_name = "N")]
    lba: u64,
    /// Bytes to read, e.g. 4096 or 1MiB (whole sectors are read; the output is cut to BYTES).
    #[arg(long, value_name = "BYTES")]
    len: String,
    /// Output file [default: stdout].
    #[arg(long, value_name = "F")]
    out: Option<PathBuf>,
    /// Print the result as JSON on stdout (needs --out for the data).
    #[arg(long, requires = "out")]
    json: bool,
}

/// Runs `disk read`.
pub fn read(a: ReadArgs) -> Result<()> {
    let len = super::size_arg("--len", &a.len)?;
    if len == 0 {
        bail!("--len: nothing to read (0 bytes)");
    }
    let opened = device::open(&Spec::new(&a.img.image, Access::PreferWrite))?;
    let result = match &opened {
        Opened::Banded(_) | Opened::ZoneFiles(_) => Err(anyhow::anyhow!("not a disk image")),
        o => read_all(o.as_block(), &a, len),
    };
    let closed = opened
        .close()
        .with_context(|| format!("closing {}", a.img.image.display()));
    let t = result?;
    closed?;
    if a.json {
        output::print_json(&t)?;
    }
    Ok(())
}

fn read_all(dev: &dyn BlockDevice, a: &ReadArgs, len: u64) -> Result<Transfer> {
    let info = dev.info();
    let ss = info.sector_size as u64;
    let sectors = len.div_ceil(ss);
    check_range(a.lba, sectors, info.capacity_sectors)?;
    let mut out: Box<dyn Write> = match &a.out {
        Some(p) => Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(std::io::stdout().lock())),
    };
    let pb = progress(Some(len), "reading");
    let end = a.lba + sectors;
    let mut t = Transfer {
        lba_start: a.lba,
        lba_end: a.lba,
        ..Transfer::default()
    };
    let mut left = len;
    let mut buf = vec![0u8; CHUNK];
    while t.lba_end < end {
        let n = (end - t.lba_end).min(CHUNK as u64 / ss);
        let b = &mut buf[..(n * ss) as usize];
        let d = match dev.read(t.lba_end, b) {
            Ok(d) => d,
            Err(e) => {
                pb.finish_and_clear();
                if t.bytes > 0 {
                    out.flush().context("writing output")?;
                    eprintln!(
                        "read {} bytes at LBA {}..{} before the failure",
                        t.bytes, a.lba, t.lba_end
                    );
                }
                return Err(e.into());
            }
        };
        t.service_ns += d.service();
        t.commands += 1;
        let take = left.min(b.len() as u64) as usize;
        out.write_all(&b[..take]).context("writing output")?;
        left -= take as u64;
        t.bytes += take as u64;
        t.lba_end += n;
        pb.inc(take as u64);
    }
    pb.finish_and_clear();
    out.flush().context("writing output")?;
    if !a.json {
        eprintln!(
            "read {len} bytes ({}) at LBA {}..{end}: {} {} in {} command{}{}",
            format_size(len),
            a.lba,
            output::ms(t.service_ns),
            if info.wall_time {
                "measured"
            } else {
                "modelled"
            },
            t.commands,
            if t.commands == 1 { "" } else { "s" },
            match &a.out {
                Some(p) => format!("; written to {}", p.display()),
                None => String::new(),
            }
        );
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_past_the_end_or_overflowing_are_refused() {
        assert!(check_range(0, 10, 10).is_ok());
        assert!(check_range(5, 6, 10).is_err());
        assert!(check_range(u64::MAX, 1, 10).is_err());
        assert!(check_range(10, 1, 10).is_err());
    }
}
