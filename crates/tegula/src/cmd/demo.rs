//! `tegula demo`: a guided tour of an emulated host-managed SMR disk that finishes in seconds.
//! It creates a disk image, writes sequentially and at queue depth, reads everything back and
//! verifies it, breaks the zone rules on purpose to show the typed errors, resets a zone, and
//! prints the zone report and a timing summary (virtual device time and wall time); then
//! (unless `--disk-only`) tours the layers built on the drives (`demo_stack`).

use crate::cmd::disk::size_arg;
use crate::output::{self, duration, mb_s, ms};
use anyhow::{bail, ensure, Context, Result};
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;
use tegula_device::{
    format_size, profile, BlockDevice, DeviceError, Disk, Nanos, Request, Zone, ZoneCondition,
    ZoneFilter, ZonedDevice,
};

/// Arguments of `tegula demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Create the demo disk image here (and keep it) instead of in a temporary directory.
    #[arg(long, value_name = "PATH")]
    image: Option<PathBuf>,
    /// Keep the temporary image afterwards and print its path.
    #[arg(long)]
    keep: bool,
    /// Capacity of the emulated drive.
    #[arg(long, value_name = "SIZE", default_value = "4GiB")]
    capacity: String,
    /// Show only the drive (the zoned-interface tour), not the engines and drives built on it.
    #[arg(long)]
    disk_only: bool,
}

const MIB: usize = 1 << 20;
/// Sequential write in 1 MiB commands.
const SEQ_BYTES: usize = 32 * MIB;
/// Queue-depth batch: this many commands of `QD_CHUNK` bytes submitted at once.
const QD: usize = 32;
const QD_CHUNK: usize = 256 << 10;
/// Random 4 KiB reads.
const RANDOM_READS: usize = 200;

/// Deterministic test data: a xorshift stream seeded by the LBA, so any range can be regenerated.
fn pattern(lba: u64, len: usize) -> Vec<u8> {
    let mut x = lba.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

/// A small deterministic random number generator for the read offsets.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn step(n: u32, title: &str) {
    println!("\n[{n}] {title}");
}

/// Shows a refused command; fails if the device accepted it.
fn expect_refusal<T>(
    what: &str,
    r: Result<T, DeviceError>,
    ok: fn(&DeviceError) -> bool,
) -> Result<()> {
    match r {
        Ok(_) => bail!("the device accepted {what}, which the zone rules forbid"),
        Err(e) if ok(&e) => {
            let variant = format!("{e:?}");
            let name = variant
                .split(|c: char| !c.is_alphanumeric())
                .next()
                .unwrap_or("?");
            println!("    {what}:\n      refused with DeviceError::{name}: {e}");
            Ok(())
        }
        Err(e) => bail!("{what} failed in an unexpected way: {e}"),
    }
}

/// Runs `tegula demo`.
pub fn run(a: DemoArgs) -> Result<()> {
    let wall = Instant::now();
    let mut cfg = profile("hm-smr")?;
    cfg.capacity = size_arg("--capacity", &a.capacity)?;
    cfg.validate()?;
    let zones = cfg.zone_count();
    ensure!(
        zones.saturating_sub(cfg.conventional_zones()) >= 3,
        "--capacity {}: the demo needs at least three sequential zones ({} MiB each); this gives {zones} zone(s) in all",
        a.capacity,
        cfg.zones.zone_size >> 20
    );
    let (tmp, path) = match &a.image {
        Some(p) => (None, p.clone()),
        None => {
            let dir = tempfile::Builder::new()
                .prefix("tegula-demo-")
                .tempdir()
                .context("creating a temporary directory")?;
            let p = dir.path().join("demo.img");
            (Some(dir), p)
        }
    };
    if path.exists() {
        bail!(
            "{} already exists; refusing to overwrite it",
            path.display()
        );
    }
    println!("tegula demo: an emulated host-managed SMR drive, driven through the zoned interface");
    step(1, "create the disk image");
    let disk = Disk::create_image(&path, cfg)?;
    output::print_kv(&output::disk_summary(&disk, Some(&path)));
    let result = tour(&disk);
    let closed = disk.close().context("closing the demo disk");
    result?;
    closed?;
    match (tmp, a.keep || a.image.is_some()) {
        (Some(dir), true) => {
            let kept = dir.keep();
            println!("\nimage kept: {}", kept.join("demo.img").display());
            println!(
                "try: tegula disk report {}",
                kept.join("demo.img").display()
            );
        }
        (None, _) => {
            println!("\nimage kept: {}", path.display());
            println!("try: tegula disk report {}", path.display());
        }
        (Some(_), false) => {
            println!("\n(the image was temporary; use --keep or --image PATH to keep it)")
        }
    }
    if !a.disk_only {
        println!("\nthe stack on emulated drives (in memory; modelled device time unless noted)");
        crate::cmd::demo_stack::run(10)?;
    }
    println!("wall time: {:.3} s", wall.elapsed().as_secs_f64());
    Ok(())
}

/// What the summary reports.
#[derive(Default)]
struct Timing {
    seq_time: Nanos,
    qd_time: Nanos,
    read_bytes: u64,
    read_time: Nanos,
    rand_lat: Vec<Nanos>,
    rand_seeks: u64,
}

/// The tour's state: the disk, the zones it uses and what it measured.
struct Tour<'a> {
    disk: &'a Disk,
    /// Sector size.
    ss: u64,
    /// Sequential zone written with single commands.
    za: u32,
    /// Sequential zone written at queue depth.
    zb: u32,
    /// An empty sequential zone.
    zc: u32,
    /// First LBAs of zones A and B.
    a_start: u64,
    b_start: u64,
    /// A conventional zone, if the drive has one.
    conv: Option<Zone>,
    timing: Timing,
}

fn tour(disk: &Disk) -> Result<()> {
    let wall = Instant::now();
    let t_start = disk.now();
    let ss = disk.info().sector_size as u64;
    let zones = disk.report_zones(ZoneFilter::All);
    let seq: Vec<&Zone> = zones
        .iter()
        .filter(|z| z.zone_type.is_sequential())
        .collect();
    ensure!(
        seq.len() >= 3,
        "the demo needs at least three sequential zones"
    );
    ensure!(
        seq[0].len_lba * ss >= (SEQ_BYTES + MIB) as u64,
        "zones are too small for the demo"
    );
    let mut t = Tour {
        disk,
        ss,
        za: seq[0].index,
        zb: seq[1].index,
        zc: seq[2].index,
        a_start: seq[0].start_lba,
        b_start: seq[1].start_lba,
        conv: zones.iter().find(|z| !z.zone_type.is_sequential()).cloned(),
        timing: Timing::default(),
    };
    t.sequential_write()?;
    t.queued_write()?;
    t.verify()?;
    t.random_reads()?;
    t.break_rules()?;
    t.reset_and_finish()?;
    t.report();
    step(9, "timing summary (virtual device time unless noted)");
    t.summary(t_start, wall);
    Ok(())
}

impl Tour<'_> {
    fn sequential_write(&mut self) -> Result<()> {
        let (disk, za) = (self.disk, self.za);
        step(
            2,
            &format!(
                "sequential write: {} into zone {za} in 1 MiB commands, then FLUSH",
                format_size(SEQ_BYTES as u64)
            ),
        );
        let t0 = disk.now();
        let mut lba = self.a_start;
        for _ in 0..SEQ_BYTES / MIB {
            disk.write(lba, &pattern(lba, MIB))?;
            lba += MIB as u64 / self.ss;
        }
        let f = disk.flush()?;
        self.timing.seq_time = disk.now() - t0;
        let z = disk.zone(za)?;
        println!(
            "    {} in {} of device time (flush {}); zone {za} is {} with its write pointer at LBA {}",
            format_size(SEQ_BYTES as u64),
            duration(self.timing.seq_time),
            ms(f.service()),
            z.condition,
            z.write_pointer_lba
        );
        Ok(())
    }

    fn queued_write(&mut self) -> Result<()> {
        let disk = self.disk;
        step(
            3,
            &format!(
                "queue depth {QD}: {QD} writes of {} to zone {} submitted at once",
                format_size(QD_CHUNK as u64),
                self.zb
            ),
        );
        let reqs: Vec<Request> = (0..QD)
            .map(|i| {
                let l = self.b_start + (i * QD_CHUNK) as u64 / self.ss;
                Request::Write {
                    lba: l,
                    data: pattern(l, QD_CHUNK),
                    fua: false,
                }
            })
            .collect();
        let t0 = disk.now();
        for (i, d) in disk.submit(reqs).into_iter().enumerate() {
            let c = d.with_context(|| format!("queued write {i}"))?;
            if i == 0 || i + 1 == QD {
                println!(
                    "    command {:>2} completed after {}",
                    i + 1,
                    ms(c.done.service())
                );
            }
        }
        disk.flush()?;
        self.timing.qd_time = disk.now() - t0;
        if let Some(c) = &self.conv {
            let l = c.start_lba + 1000;
            disk.write(l, &pattern(l, MIB))?;
            println!(
                "    and 1 MiB at LBA {l} of conventional zone {}: random writes are allowed there",
                c.index
            );
        }
        Ok(())
    }

    fn verify(&mut self) -> Result<()> {
        let (disk, ss, za, zb) = (self.disk, self.ss, self.za, self.zb);
        step(4, "read everything back and verify it byte for byte");
        let t0 = disk.now();
        let mut buf = vec![0u8; MIB];
        let mut lba = self.a_start;
        for _ in 0..SEQ_BYTES / MIB {
            disk.read(lba, &mut buf)?;
            ensure!(
                buf == pattern(lba, MIB),
                "zone {za}: data at LBA {lba} differs from what was written"
            );
            lba += MIB as u64 / ss;
        }
        self.timing.read_bytes = SEQ_BYTES as u64;
        self.timing.read_time = disk.now() - t0;
        let reqs: Vec<Request> = (0..QD)
            .map(|i| Request::Read {
                lba: self.b_start + (i * QD_CHUNK) as u64 / ss,
                sectors: QD_CHUNK as u64 / ss,
            })
            .collect();
        for (i, d) in disk.submit(reqs).into_iter().enumerate() {
            let l = self.b_start + (i * QD_CHUNK) as u64 / ss;
            let data = d?.data.context("a batched read returned no data")?;
            ensure!(
                data == pattern(l, QD_CHUNK),
                "zone {zb}: data at LBA {l} differs"
            );
        }
        let mut total = (SEQ_BYTES + QD * QD_CHUNK) as u64;
        if let Some(c) = &self.conv {
            let l = c.start_lba + 1000;
            disk.read(l, &mut buf)?;
            ensure!(
                buf == pattern(l, MIB),
                "conventional zone: data at LBA {l} differs"
            );
            total += MIB as u64;
        }
        println!(
            "    {} verified (zone {za} sequentially, zone {zb} at queue depth {QD}{})",
            format_size(total),
            if self.conv.is_some() {
                ", and the conventional zone"
            } else {
                ""
            }
        );
        Ok(())
    }

    /// The data the tour wrote at `lba` in zone A or B (4 KiB).
    fn expected(&self, lba: u64) -> Vec<u8> {
        let ss = self.ss;
        let a_end = self.a_start + SEQ_BYTES as u64 / ss;
        let (base, bytes) = if lba >= self.a_start && lba < a_end {
            (self.a_start, MIB)
        } else {
            (self.b_start, QD_CHUNK)
        };
        let chunk = bytes as u64 / ss;
        let first = base + (lba - base) / chunk * chunk;
        let off = ((lba - first) * ss) as usize;
        pattern(first, bytes)[off..off + 4096].to_vec()
    }

    fn random_reads(&mut self) -> Result<()> {
        let disk = self.disk;
        step(
            5,
            &format!(
                "{RANDOM_READS} random 4 KiB reads across zones {} and {}",
                self.za, self.zb
            ),
        );
        let seeks0 = disk.stats().mech.seeks;
        let mut rng = Rng(0x5eed);
        let mut small = vec![0u8; 4096];
        let per = 4096 / self.ss;
        let a_blocks = SEQ_BYTES as u64 / 4096;
        let b_blocks = (QD * QD_CHUNK) as u64 / 4096;
        for i in 0..RANDOM_READS {
            let l = if i % 2 == 0 {
                self.a_start + rng.below(a_blocks) * per
            } else {
                self.b_start + rng.below(b_blocks) * per
            };
            let d = disk.read(l, &mut small)?;
            ensure!(
                small == self.expected(l),
                "random read at LBA {l} returned wrong data"
            );
            self.timing.rand_lat.push(d.service());
        }
        self.timing.rand_seeks = disk.stats().mech.seeks - seeks0;
        let lat = &self.timing.rand_lat;
        let avg = lat.iter().sum::<Nanos>() / lat.len().max(1) as u64;
        println!(
            "    average {} per read (min {}, max {}), {} seeks",
            ms(avg),
            ms(lat.iter().copied().min().unwrap_or(0)),
            ms(lat.iter().copied().max().unwrap_or(0)),
            self.timing.rand_seeks
        );
        Ok(())
    }

    fn break_rules(&self) -> Result<()> {
        let (disk, za, zc) = (self.disk, self.za, self.zc);
        step(
            6,
            "break the zone rules on purpose: the device refuses with typed errors",
        );
        let mut small = vec![0u8; 4096];
        let wp = disk.zone(za)?.write_pointer_lba;
        expect_refusal(
            &format!(
                "a write at LBA {} in zone {za} (8 sectors past its write pointer)",
                wp + 8
            ),
            disk.write(wp + 8, &small),
            |e| matches!(e, DeviceError::UnalignedWrite { .. }),
        )?;
        let zc_start = disk.zone(zc)?.start_lba;
        expect_refusal(
            &format!("a read of empty zone {zc} (past its write pointer)"),
            disk.read(zc_start, &mut small),
            |e| matches!(e, DeviceError::ReadPastWritePointer { .. }),
        )?;
        let end_a = disk.zone(za)?.end_lba();
        expect_refusal(
            &format!("a 1 MiB write that would run past the end of zone {za}"),
            disk.write(end_a - 8, &pattern(0, MIB)),
            |e| {
                matches!(
                    e,
                    DeviceError::UnalignedWrite { .. } | DeviceError::ZoneBoundary { .. }
                )
            },
        )?;
        if let Some(c) = &self.conv {
            expect_refusal(
                &format!("a reset of conventional zone {}", c.index),
                disk.reset_zone(c.index),
                |e| matches!(e, DeviceError::InvalidZoneOp { .. }),
            )?;
        }
        Ok(())
    }

    fn reset_and_finish(&self) -> Result<()> {
        let (disk, zb, zc) = (self.disk, self.zb, self.zc);
        step(
            7,
            &format!("reset zone {zb} (RESET WRITE POINTER) and finish zone {zc}"),
        );
        let before = disk.zone(zb)?;
        let d = disk.reset_zone(zb)?;
        let after = disk.zone(zb)?;
        println!(
            "    zone {zb}: {} (wp {}) -> {} (wp {}) in {}",
            before.condition,
            before.write_pointer_lba,
            after.condition,
            after.write_pointer_lba,
            ms(d.service())
        );
        ensure!(
            after.condition == ZoneCondition::Empty,
            "zone {zb} is not empty after a reset"
        );
        let mut small = vec![0u8; 4096];
        expect_refusal(
            &format!("a read of the data that was in zone {zb}"),
            disk.read(self.b_start, &mut small),
            |e| matches!(e, DeviceError::ReadPastWritePointer { .. }),
        )?;
        disk.finish_zone(zc)?;
        println!("    zone {zc}: empty -> {}", disk.zone(zc)?.condition);
        Ok(())
    }

    fn report(&self) {
        step(8, "zone report (zones that are not empty)");
        let stats = self.disk.stats();
        let written = |i: u32| {
            stats
                .zone_bytes_written
                .get(i as usize)
                .is_some_and(|&b| b > 0)
        };
        let shown: Vec<Zone> = self
            .disk
            .report_zones(ZoneFilter::All)
            .into_iter()
            .filter(|z| {
                z.condition != ZoneCondition::Empty
                    && (z.zone_type.is_sequential() || written(z.index))
            })
            .collect();
        print!(
            "{}",
            indent(&output::zone_table(
                &shown,
                Some(&stats.zone_bytes_written),
                output::Unit::Lba,
                self.disk.info().sector_size
            ))
        );
    }
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    {l}\n")).collect()
}

impl Tour<'_> {
    fn summary(&self, t_start: Nanos, wall: Instant) {
        let (disk, t) = (self.disk, &self.timing);
        let media = disk.with_media(|m| m.mechanics().geometry().media_rate_at(self.a_start)) / 1e6;
        let seq_bytes = SEQ_BYTES as u64;
        let qd_bytes = (QD * QD_CHUNK) as u64;
        let seq = mb_s(seq_bytes, t.seq_time);
        let s = disk.stats();
        let avg = t.rand_lat.iter().sum::<Nanos>() as f64 / t.rand_lat.len().max(1) as f64 / 1e6;
        let rows: Vec<(String, String)> = vec![
            (
                "sequential write".into(),
                format!(
                    "{:.1} MB/s ({} in {}) = {:.0}% of the media rate at LBA {} ({media:.1} MB/s)",
                    seq,
                    format_size(seq_bytes),
                    duration(t.seq_time),
                    100.0 * seq / media.max(1e-9),
                    self.a_start
                ),
            ),
            (
                format!("queue-depth {QD} write"),
                format!(
                    "{:.1} MB/s ({} in {})",
                    mb_s(qd_bytes, t.qd_time),
                    format_size(qd_bytes),
                    duration(t.qd_time)
                ),
            ),
            (
                "sequential read".into(),
                format!(
                    "{:.1} MB/s ({} in {})",
                    mb_s(t.read_bytes, t.read_time),
                    format_size(t.read_bytes),
                    duration(t.read_time)
                ),
            ),
            (
                "random 4 KiB read".into(),
                format!(
                    "{avg:.3} ms average latency over {} reads ({:.0} IOPS), {} seeks",
                    t.rand_lat.len(),
                    if avg > 0.0 { 1000.0 / avg } else { 0.0 },
                    t.rand_seeks
                ),
            ),
            (
                "seeks (whole demo)".into(),
                format!(
                    "{} (distance {} cylinders)",
                    s.mech.seeks, s.mech.seek_distance
                ),
            ),
            ("device busy".into(), duration(s.busy_ns)),
            (
                "virtual time elapsed".into(),
                duration(disk.now() - t_start),
            ),
            (
                "wall time (tour)".into(),
                format!("{:.3} s", wall.elapsed().as_secs_f64()),
            ),
        ];
        let w = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;
        for (k, v) in rows {
            println!("    {:<w$}  {v}", format!("{k}:"));
        }
    }
}
