//! `disk write` and `disk read`: data in and out, with the modelled service time.

use super::{close, open, size_arg, Access, ImageArg};
use crate::output;
use anyhow::{bail, Context, Result};
use clap::{ArgGroup, Args};
use indicatif::{ProgressBar, ProgressStyle};
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Read, Write};
use std::path::PathBuf;
use tegula_device::{
    format_size, BlockDevice, DeviceError, Disk, Nanos, WriteFlags, ZoneCondition, ZonedDevice,
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

/// Where a write starts: `--lba`, or the write pointer (start of a conventional zone) of `--zone`.
fn start_lba(disk: &Disk, lba: Option<u64>, zone: Option<u32>) -> Result<u64> {
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
    if z.condition == ZoneCondition::Full || z.write_pointer_lba >= z.end_lba() {
        return Err(DeviceError::ZoneFull {
            zone: zi,
            write_pointer: z.write_pointer_lba,
            lba: z.write_pointer_lba,
        }
        .into());
    }
    Ok(z.write_pointer_lba)
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
    if super::dm::is_dm(&path) {
        let Some(lba) = a.lba else {
            bail!(
                "{} is a dm-smr drive without zones: give --lba",
                path.display()
            );
        };
        return super::dm::write(&path, lba, &mut *input, a.fua);
    }
    let disk = open(&path, Access::ReadWrite)?;
    let result = write_all(&disk, &a, &mut *input, total);
    // Whatever happened, persist what was acknowledged.
    let closed = close(disk, &path);
    result?;
    closed
}

fn write_all(disk: &Disk, a: &WriteArgs, input: &mut dyn Read, total: Option<u64>) -> Result<()> {
    let info = disk.info();
    let ss = info.sector_size as usize;
    let first = start_lba(disk, a.lba, a.zone)?;
    let flags = WriteFlags { fua: a.fua };
    let pb = progress(total, "writing");
    let mut buf = vec![0u8; CHUNK];
    let mut pos = first;
    let (mut bytes, mut service, mut commands): (u64, Nanos, u64) = (0, 0, 0);
    let mut padded = 0usize;
    let t0 = disk.now();
    loop {
        let n = fill(input, &mut buf).context("reading input")?;
        if n == 0 {
            break;
        }
        let mut len = n;
        if n % ss != 0 {
            len = n.div_ceil(ss) * ss;
            padded = len - n;
            buf[n..len].fill(0);
        }
        match disk.write_with(pos, &buf[..len], flags) {
            Ok(d) => {
                service += d.service();
                commands += 1;
                bytes += n as u64;
                pos += (len / ss) as u64;
                pb.inc(n as u64);
            }
            Err(e) => {
                pb.finish_and_clear();
                if bytes > 0 {
                    eprintln!("wrote {bytes} bytes at LBA {first}..{pos} before the failure");
                }
                return Err(e.into());
            }
        }
        if n < CHUNK {
            break;
        }
    }
    pb.finish_and_clear();
    if bytes == 0 {
        bail!("nothing to write: the input is empty");
    }
    let flush = if disk.config().cache.write_cache && !a.fua {
        disk.flush()?.service()
    } else {
        0
    };
    let zs = info.zone_sectors.max(1);
    let (z0, z1) = (first / zs, (pos - 1) / zs);
    let zones = if z0 == z1 {
        format!("zone {z0}")
    } else {
        format!("zones {z0}..={z1}")
    };
    eprintln!(
        "wrote {bytes} bytes ({} sector{}) at LBA {first}..{pos} ({zones}): {} modelled in {commands} command{}{}",
        pos - first,
        if pos - first == 1 { "" } else { "s" },
        output::ms(service),
        if commands == 1 { "" } else { "s" },
        if flush > 0 {
            format!(" + flush {}", output::ms(flush))
        } else {
            String::new()
        }
    );
    if padded > 0 {
        eprintln!(
            "note: the input is not a whole number of {ss}-byte sectors; padded the last sector with {padded} zero bytes"
        );
    }
    let z = disk.zone(z1 as u32)?;
    if z.zone_type.is_sequential() {
        eprintln!(
            "zone {z1}: write pointer now at LBA {} ({}), {} of virtual time",
            z.write_pointer_lba,
            z.condition,
            output::duration(disk.now() - t0)
        );
    }
    Ok(())
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
}

/// Runs `disk read`.
pub fn read(a: ReadArgs) -> Result<()> {
    let len = size_arg("--len", &a.len)?;
    if len == 0 {
        bail!("--len: nothing to read (0 bytes)");
    }
    if super::dm::is_dm(&a.img.image) {
        return super::dm::read(&a.img.image, a.lba, len, a.out.as_deref());
    }
    let disk = open(&a.img.image, Access::PreferWrite)?;
    let result = read_all(&disk, &a, len);
    let closed = close(disk, &a.img.image);
    result?;
    closed
}

fn read_all(disk: &Disk, a: &ReadArgs, len: u64) -> Result<()> {
    let ss = disk.info().sector_size as u64;
    let mut out: Box<dyn Write> = match &a.out {
        Some(p) => Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(std::io::stdout().lock())),
    };
    let sectors = len.div_ceil(ss);
    let pb = progress(Some(len), "reading");
    let (mut pos, end) = (a.lba, a.lba.saturating_add(sectors));
    let (mut left, mut service, mut commands): (u64, Nanos, u64) = (len, 0, 0);
    let mut buf = vec![0u8; CHUNK];
    while pos < end {
        let n = (end - pos).min(CHUNK as u64 / ss);
        let b = &mut buf[..(n * ss) as usize];
        let d = match disk.read(pos, b) {
            Ok(d) => d,
            Err(e) => {
                pb.finish_and_clear();
                let done = len - left;
                if done > 0 {
                    out.flush().context("writing output")?;
                    eprintln!(
                        "read {done} bytes at LBA {}..{pos} before the failure",
                        a.lba
                    );
                }
                return Err(e.into());
            }
        };
        service += d.service();
        commands += 1;
        let take = left.min(b.len() as u64) as usize;
        out.write_all(&b[..take]).context("writing output")?;
        left -= take as u64;
        pos += n;
        pb.inc(take as u64);
    }
    pb.finish_and_clear();
    out.flush().context("writing output")?;
    eprintln!(
        "read {len} bytes ({}) at LBA {}..{end}: {} modelled in {commands} command{}{}",
        format_size(len),
        a.lba,
        output::ms(service),
        if commands == 1 { "" } else { "s" },
        match &a.out {
            Some(p) => format!("; written to {}", p.display()),
            None => String::new(),
        }
    );
    Ok(())
}
