//! Seed 001's Figure 2 on the modelled `hm-smr` drive, in virtual device time:
//!
//! * (a) start-up discovery time of one zone against the number of extents in it, for several
//!   back-pointer counts (open + forward iteration over every metadata block);
//! * (b) write throughput of ZEA puts against raw writes of the same data (1024 extents of
//!   4 KiB to 2 MiB, each made durable before the next, on both sides);
//! * (c) sequential reads of every extent through `Zea::get` against raw reads of the same
//!   sizes.
//!
//! Run: `cargo bench -p tegula-zea --bench figure2 [-- --out DIR] [-- --quick]`. Writes
//! `zea-figure2.md`, `zea-figure2.json` and `zea-figure2{a,b,c}.svg` to DIR (default `target/figure2`).
//! The emulator is deterministic, so one run per point is exact (the paper's error bars
//! collapse to zero).
#![allow(clippy::unwrap_used)]

use plotters::prelude::*;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use tegula_device::{profile, BlockDevice, Disk, ZonedDevice};
use tegula_zea::{Options, Zea};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

fn disk(capacity: u64, store_data: bool) -> Arc<Disk> {
    let mut cfg = profile("hm-smr").unwrap();
    cfg.capacity = capacity;
    cfg.store_data = store_data;
    cfg.zones.conventional_zones = Some(1);
    Arc::new(Disk::in_memory(cfg).unwrap())
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// One point of (a).
struct Discovery {
    back_pointers: u16,
    extents: u64,
    /// Device seconds for `Zea::open` plus a full forward iteration.
    forward_s: f64,
    /// Device seconds for a full backward iteration.
    backward_s: f64,
    /// Metadata blocks read by the forward iterator's skip pass.
    skip_reads: u64,
}

fn discovery(bps: &[u16], counts: &[u64]) -> Vec<Discovery> {
    let mut out = Vec::new();
    for &bp in bps {
        let d = disk(512 * MIB, true);
        let dev: Arc<dyn ZonedDevice> = d.clone();
        let opts = Options {
            back_pointers: bp,
            ..Options::default()
        };
        let mut z = Zea::open(dev.clone(), 1, opts.clone()).unwrap();
        let block = vec![0x5au8; 4096];
        let mut written = 0u64;
        for &n in counts {
            while written < n {
                z.put(written, &block).unwrap();
                written += 1;
            }
            let t0 = dev.now();
            let z2 = Zea::open(dev.clone(), 1, opts.clone()).unwrap();
            let mut it = z2.iter_forward();
            let found = it.by_ref().filter(|m| m.is_ok()).count() as u64;
            let skip_reads = it.skip_reads();
            let t1 = dev.now();
            assert_eq!(found, n, "forward iteration found every extent");
            let back = z2.iter_back().filter(|m| m.is_ok()).count() as u64;
            let t2 = dev.now();
            assert_eq!(back, n, "backward iteration found every extent");
            out.push(Discovery {
                back_pointers: bp,
                extents: n,
                forward_s: secs(t1 - t0),
                backward_s: secs(t2 - t1),
                skip_reads,
            });
        }
    }
    out
}

/// One point of (b) or (c).
struct Throughput {
    extent: u64,
    extents: u64,
    zea_mb_s: f64,
    raw_mb_s: f64,
}

impl Throughput {
    fn overhead_pct(&self) -> f64 {
        (self.raw_mb_s / self.zea_mb_s - 1.0) * 100.0
    }
}

/// Raw sequential writer over the sequential zones of a disk (splits at zone ends).
struct Raw {
    dev: Arc<dyn ZonedDevice>,
    zone: u32,
    wp: u64,
    end: u64,
}

impl Raw {
    fn new(dev: Arc<dyn ZonedDevice>) -> Raw {
        let z = dev.zone(1).unwrap();
        Raw {
            dev,
            zone: 1,
            wp: z.start_lba,
            end: z.end_lba(),
        }
    }

    /// Writes `data` at the next LBAs; returns the LBA it started at.
    fn write(&mut self, data: &[u8]) -> u64 {
        let ss = 4096usize;
        let mut at = 0usize;
        let first = self.wp;
        while at < data.len() {
            if self.wp == self.end {
                self.zone += 1;
                let z = self.dev.zone(self.zone).unwrap();
                self.wp = z.start_lba;
                self.end = z.end_lba();
            }
            let n = (data.len() - at).min(((self.end - self.wp) as usize) * ss);
            self.dev.write(self.wp, &data[at..at + n]).unwrap();
            self.wp += (n / ss) as u64;
            at += n;
        }
        first
    }
}

/// ZEA writer that moves on to the next zone when one is full.
struct ZeaSeq {
    dev: Arc<dyn ZonedDevice>,
    zea: Zea,
}

impl ZeaSeq {
    fn new(dev: Arc<dyn ZonedDevice>) -> ZeaSeq {
        let zea = Zea::open(dev.clone(), 1, Options::default()).unwrap();
        ZeaSeq { dev, zea }
    }

    fn put(&mut self, zba: u64, data: &[u8]) -> (u32, u64) {
        if self.zea.max_put() < data.len() as u64 {
            let next = self.zea.zone() + 1;
            self.zea = Zea::open(self.dev.clone(), next, Options::default()).unwrap();
        }
        let p = self.zea.put(zba, data).unwrap();
        (self.zea.zone(), p.lba)
    }
}

fn writes(sizes: &[u64], extents: u64) -> Vec<Throughput> {
    let mut out = Vec::new();
    for &size in sizes {
        let cap = (extents * size * 5 / 4 + 2 * 256 * MIB).next_multiple_of(256 * MIB);
        let data = vec![0xa5u8; size as usize];
        // ZEA: put = data + metadata block, then a cache flush (its durability contract).
        let zd = disk(cap, false);
        let zdev: Arc<dyn ZonedDevice> = zd.clone();
        let mut z = ZeaSeq::new(zdev.clone());
        let t0 = zdev.now();
        for i in 0..extents {
            z.put(i, &data);
        }
        let zea_ns = zdev.now() - t0;
        // Raw: the same data written at the write pointer, flushed after each extent too.
        let rd = disk(cap, false);
        let rdev: Arc<dyn ZonedDevice> = rd.clone();
        let mut r = Raw::new(rdev.clone());
        let t0 = rdev.now();
        for _ in 0..extents {
            r.write(&data);
            rdev.flush().unwrap();
        }
        let raw_ns = rdev.now() - t0;
        let mb = (extents * size) as f64 / 1e6;
        out.push(Throughput {
            extent: size,
            extents,
            zea_mb_s: mb / secs(zea_ns),
            raw_mb_s: mb / secs(raw_ns),
        });
    }
    out
}

fn reads(sizes: &[u64], total: u64) -> Vec<Throughput> {
    let mut out = Vec::new();
    for &size in sizes {
        let extents = (total / size).max(1);
        let cap = (extents * (size + 4096) * 5 / 4 + 2 * 256 * MIB).next_multiple_of(256 * MIB);
        let data: Vec<u8> = (0..size).map(|i| (i * 7 + 3) as u8).collect();
        let zd = disk(cap, true);
        let zdev: Arc<dyn ZonedDevice> = zd.clone();
        let mut z = ZeaSeq::new(zdev.clone());
        let placed: Vec<(u32, u64)> = (0..extents).map(|i| z.put(i, &data)).collect();
        let rd = disk(cap, true);
        let rdev: Arc<dyn ZonedDevice> = rd.clone();
        let mut r = Raw::new(rdev.clone());
        let lbas: Vec<u64> = (0..extents).map(|_| r.write(&data)).collect();
        rdev.flush().unwrap();
        // Let both drives settle, then read everything back in write order.
        zdev.idle(1_000_000_000);
        rdev.idle(1_000_000_000);
        let mut zeas: Vec<Option<Zea>> = Vec::new();
        let t0 = zdev.now();
        for (i, &(zone, lba)) in placed.iter().enumerate() {
            let zi = zone as usize;
            if zeas.len() <= zi {
                zeas.resize_with(zi + 1, || None);
            }
            if zeas[zi].is_none() {
                zeas[zi] = Some(Zea::open(zdev.clone(), zone, Options::default()).unwrap());
            }
            let got = zeas[zi].as_ref().unwrap().get(lba, size).unwrap();
            assert_eq!(got.len() as u64, size, "extent {i}");
        }
        let zea_ns = zdev.now() - t0;
        let mut buf = vec![0u8; size.next_multiple_of(4096) as usize];
        let t0 = rdev.now();
        for &lba in &lbas {
            rdev.read(lba, &mut buf).unwrap();
        }
        let raw_ns = rdev.now() - t0;
        let mb = (extents * size) as f64 / 1e6;
        out.push(Throughput {
            extent: size,
            extents,
            zea_mb_s: mb / secs(zea_ns),
            raw_mb_s: mb / secs(raw_ns),
        });
    }
    out
}

fn size_label(b: u64) -> String {
    if b >= MIB {
        format!("{} MiB", b / MIB)
    } else {
        format!("{} KiB", b / KIB)
    }
}

type PlotResult = Result<(), Box<dyn std::error::Error>>;

fn plot_discovery(path: &std::path::Path, pts: &[Discovery], bps: &[u16]) -> PlotResult {
    let root = SVGBackend::new(path, (720, 450)).into_drawing_area();
    root.fill(&WHITE)?;
    let xmax = pts.iter().map(|p| p.extents).max().unwrap_or(1) as f64 * 1.05;
    let ymax = pts.iter().map(|p| p.forward_s).fold(0.0, f64::max) * 1.1;
    let mut c = ChartBuilder::on(&root)
        .caption(
            "(a) ZEA start-up discovery of one zone (hm-smr, 4 KiB extents)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax.max(1e-6))?;
    c.configure_mesh()
        .x_desc("extents in the zone")
        .y_desc("device seconds (open + forward iteration)")
        .draw()?;
    for (i, &bp) in bps.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let line: Vec<(f64, f64)> = pts
            .iter()
            .filter(|p| p.back_pointers == bp)
            .map(|p| (p.extents as f64, p.forward_s))
            .collect();
        c.draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))?
            .label(format!("{bp} back pointers"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        c.draw_series(line.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

fn plot_throughput(path: &std::path::Path, title: &str, pts: &[Throughput]) -> PlotResult {
    let root = SVGBackend::new(path, (720, 450)).into_drawing_area();
    root.fill(&WHITE)?;
    let ymax = pts
        .iter()
        .map(|p| p.zea_mb_s.max(p.raw_mb_s))
        .fold(0.0, f64::max)
        * 1.15;
    let xs: Vec<f64> = pts.iter().map(|p| (p.extent as f64).log2()).collect();
    let (x0, x1) = (
        xs.first().copied().unwrap_or(12.0) - 0.3,
        xs.last().copied().unwrap_or(21.0) + 0.3,
    );
    let labels: Vec<(f64, String)> = pts
        .iter()
        .map(|p| ((p.extent as f64).log2(), size_label(p.extent)))
        .collect();
    let mut c = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0f64..ymax.max(1e-6))?;
    c.configure_mesh()
        .x_desc("extent size")
        .y_desc("MB/s (device time)")
        .x_labels(labels.len())
        .x_label_formatter(&|x| {
            labels
                .iter()
                .min_by(|a, b| (a.0 - x).abs().total_cmp(&(b.0 - x).abs()))
                .map(|l| l.1.clone())
                .unwrap_or_default()
        })
        .draw()?;
    let series = [
        ("ZEA", pts.iter().map(|p| p.zea_mb_s).collect::<Vec<_>>(), 0),
        ("raw", pts.iter().map(|p| p.raw_mb_s).collect::<Vec<_>>(), 1),
    ];
    for (name, ys, ci) in series {
        let color = Palette99::pick(ci).to_rgba();
        let line: Vec<(f64, f64)> = xs.iter().copied().zip(ys).collect();
        c.draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        c.draw_series(line.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

fn main() -> PlotResult {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let t = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
            PathBuf::from(t).join("figure2")
        });
    std::fs::create_dir_all(&out)?;
    let wall = Instant::now();
    let bps: Vec<u16> = vec![1, 4, 16, 64];
    let counts: Vec<u64> = if quick {
        vec![1000, 4000]
    } else {
        vec![2000, 8000, 16000, 24000, 32000]
    };
    let sizes: Vec<u64> = vec![4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, MIB, 2 * MIB];
    let (nwrite, read_total) = if quick {
        (128, 32 * MIB)
    } else {
        (1024, 256 * MIB)
    };
    let a = discovery(&bps, &counts);
    eprintln!("(a) done after {:.1} s wall", wall.elapsed().as_secs_f64());
    let b = writes(&sizes, nwrite);
    eprintln!("(b) done after {:.1} s wall", wall.elapsed().as_secs_f64());
    let c = reads(&sizes, read_total);
    eprintln!("(c) done after {:.1} s wall", wall.elapsed().as_secs_f64());

    let mut md = String::new();
    writeln!(
        md,
        "### (a) Start-up discovery of one 256 MiB zone (4 KiB extents)\n"
    )?;
    writeln!(md, "| back pointers | extents | open + forward iteration (device s) | backward iteration (device s) | skip-pass reads |")?;
    writeln!(md, "| ---: | ---: | ---: | ---: | ---: |")?;
    for p in &a {
        writeln!(
            md,
            "| {} | {} | {:.3} | {:.3} | {} |",
            p.back_pointers, p.extents, p.forward_s, p.backward_s, p.skip_reads
        )?;
    }
    for (name, pts, what) in [
        (
            "(b) Writes",
            &b,
            "extents, each flushed before the next (ZEA: data + metadata block + flush; raw: data + flush)",
        ),
        (
            "(c) Sequential reads",
            &c,
            "extents read in write order (ZEA: `get`, data + metadata block in one command; raw: data)",
        ),
    ] {
        writeln!(md, "\n### {name}: {} {what}\n", pts[0].extents)?;
        writeln!(
            md,
            "| extent | extents | ZEA MB/s | raw MB/s | ZEA overhead |"
        )?;
        writeln!(md, "| ---: | ---: | ---: | ---: | ---: |")?;
        for p in pts.iter() {
            writeln!(
                md,
                "| {} | {} | {:.2} | {:.2} | {:+.2}% |",
                size_label(p.extent),
                p.extents,
                p.zea_mb_s,
                p.raw_mb_s,
                p.overhead_pct()
            )?;
        }
    }
    std::fs::write(out.join("zea-figure2.md"), &md)?;
    let json = serde_json::json!({
        "discovery": a.iter().map(|p| serde_json::json!({
            "back_pointers": p.back_pointers, "extents": p.extents,
            "forward_device_s": p.forward_s, "backward_device_s": p.backward_s,
            "skip_reads": p.skip_reads,
        })).collect::<Vec<_>>(),
        "writes": b.iter().map(|p| serde_json::json!({
            "extent": p.extent, "extents": p.extents, "zea_mb_s": p.zea_mb_s,
            "raw_mb_s": p.raw_mb_s, "overhead_pct": p.overhead_pct(),
        })).collect::<Vec<_>>(),
        "reads": c.iter().map(|p| serde_json::json!({
            "extent": p.extent, "extents": p.extents, "zea_mb_s": p.zea_mb_s,
            "raw_mb_s": p.raw_mb_s, "overhead_pct": p.overhead_pct(),
        })).collect::<Vec<_>>(),
    });
    std::fs::write(
        out.join("zea-figure2.json"),
        serde_json::to_string_pretty(&json)?,
    )?;
    plot_discovery(&out.join("zea-figure2a.svg"), &a, &bps)?;
    plot_throughput(
        &out.join("zea-figure2b.svg"),
        "(b) ZEA puts vs raw writes (hm-smr, durable per extent)",
        &b,
    )?;
    plot_throughput(
        &out.join("zea-figure2c.svg"),
        "(c) Sequential reads through ZEA vs raw (hm-smr)",
        &c,
    )?;
    print!("{md}");
    eprintln!(
        "wrote {} (zea-figure2.md, zea-figure2.json, zea-figure2a/b/c.svg) in {:.1} s wall",
        out.display(),
        wall.elapsed().as_secs_f64()
    );
    Ok(())
}
