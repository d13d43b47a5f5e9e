//! End-to-end accuracy: the prober against drives whose configuration it never sees, checked
//! against that configuration. The default run probes two small drives (one drive-managed,
//! one conventional) with a few tests; `TEGULA_PROBE_MATRIX=1` runs every test on the shipped
//! drives (Skylight's three emulated drives, the 5 and 8 TB Seagates) and on a generated
//! matrix of random drive-managed configurations and conventional drives, printing the
//! accuracy table of `docs/guides/probe.md`:
//!
//! `TEGULA_PROBE_MATRIX=1 cargo test --release -p tegula-skylight --test accuracy -- --nocapture --test-threads 1`
#![allow(clippy::unwrap_used, missing_docs)]

use rand::{Rng, SeedableRng};
use std::io::Write as _;
use std::sync::Arc;
use tegula_device::{BlockDevice, Disk, DiskConfig};
use tegula_skylight::report::{
    CacheLayout, CacheLocation, CacheMedia, CleaningKind, DriveType, Mapping, ZoneLayout,
};
use tegula_skylight::{
    probe, BlockTarget, BoxError, Fresh, PowerControl, ProbeOptions, Quiet, Report,
};
use tegula_stl::{
    layout, CacheLocation as Loc, CacheMedia as Med, Cleaning, DmConfig, DmDrive, StlKind,
};

struct Power(Arc<DmDrive>);

impl PowerControl for Power {
    fn arm_cut(&self, after: u64, seed: u64) {
        self.0.arm_power_cut(after, seed);
    }
    fn cut_now(&self) {
        self.0.power_cut();
    }
    fn power_on(&self) -> Result<(), BoxError> {
        self.0.power_on()?;
        Ok(())
    }
    fn is_powered(&self) -> bool {
        self.0.is_powered()
    }
}

fn dm(cfg: &DmConfig) -> (Arc<dyn BlockDevice>, Option<Arc<dyn PowerControl>>) {
    let d = Arc::new(DmDrive::new(cfg.clone()).unwrap());
    let p: Arc<dyn PowerControl> = Arc::new(Power(d.clone()));
    (d, Some(p))
}

fn probe_dm(cfg: &DmConfig, tests: &str) -> Report {
    let (dev, power) = dm(cfg);
    let c = cfg.clone();
    let fresh: Fresh = Box::new(move || Ok(dm(&c)));
    let mut t = BlockTarget::new("drive", dev).with_fresh(fresh);
    if let Some(p) = power {
        t = t.with_power(p);
    }
    let opts = ProbeOptions {
        tests: tegula_skylight::parse_tests(tests).unwrap(),
        ..ProbeOptions::default()
    };
    probe::run(&mut t, &opts, &mut Quiet).unwrap().report
}

fn probe_cmr(cfg: &DiskConfig, tests: &str) -> Report {
    let dev: Arc<dyn BlockDevice> = Arc::new(Disk::in_memory(cfg.clone()).unwrap());
    let mut t = BlockTarget::new("cmr", dev);
    let opts = ProbeOptions {
        tests: tegula_skylight::parse_tests(tests).unwrap(),
        ..ProbeOptions::default()
    };
    probe::run(&mut t, &opts, &mut Quiet).unwrap().report
}

/// One checked property: its name, whether the prober answered, and whether it was right.
#[derive(Debug, Clone)]
struct Check {
    property: &'static str,
    expected: String,
    got: String,
    answered: bool,
    right: bool,
}

fn cat<T: PartialEq + std::fmt::Debug>(
    p: &'static str,
    want: Option<T>,
    got: Option<T>,
) -> Option<Check> {
    let want = want?;
    Some(Check {
        property: p,
        expected: format!("{want:?}"),
        got: format!("{got:?}"),
        answered: got.is_some(),
        right: got.as_ref() == Some(&want),
    })
}

fn size(p: &'static str, want: Option<f64>, got: Option<f64>, tol: f64) -> Option<Check> {
    let want = want?;
    Some(Check {
        property: p,
        expected: format!("{want:.4e}"),
        got: got.map_or("null".into(), |g| {
            format!("{g:.4e} ({:+.1}%)", (g / want - 1.0) * 100.0)
        }),
        answered: got.is_some(),
        right: got.is_some_and(|g| (g - want).abs() <= tol * want),
    })
}

/// Whether the configuration's journal has a map merge the prober can see.
fn heads_of(media: &str) -> u32 {
    tegula_device::profile(media).unwrap().media.heads
}

/// The checks of a drive-managed drive against its configuration.
fn checks_dm(cfg: &DmConfig, r: &Report) -> Vec<Check> {
    let journal = cfg.stl == StlKind::Journal;
    let full = cfg.stl == StlKind::FullyAssociative;
    let flash = cfg.cache_media == Med::Flash;
    let ss = 4096.0;
    let mut v: Vec<Option<Check>> = vec![
        cat("drive_type", Some(DriveType::Smr), r.drive_type),
        cat(
            "cache.media",
            Some(if flash {
                CacheMedia::Flash
            } else {
                CacheMedia::Disk
            }),
            r.cache.media,
        ),
        cat("volatile_cache", Some(cfg.volatile_cache), r.volatile_cache),
        cat(
            "cleaning.kind",
            Some(match cfg.cleaning {
                Cleaning::Lazy => CleaningKind::Lazy,
                Cleaning::Aggressive => CleaningKind::Aggressive,
            }),
            r.cleaning.kind,
        ),
        cat(
            "mapping",
            Some(if full {
                Mapping::Dynamic
            } else {
                Mapping::Static
            }),
            r.mapping,
        ),
        cat("circular_log", Some(journal), r.circular_log),
        cat(
            "zones.surfaces",
            Some(heads_of(&cfg.media)),
            r.zones.as_ref().and_then(|z| z.surfaces),
        ),
        cat(
            "zones.layout",
            Some(ZoneLayout::SurfaceStrokes),
            r.zones.as_ref().and_then(|z| z.layout),
        ),
    ];
    if !flash {
        let (layout, location) = match (cfg.stl, cfg.cache_location) {
            (StlKind::FullyAssociative, _) | (_, Loc::Distributed) => {
                (CacheLayout::Distributed, None)
            }
            (_, Loc::Od) => (CacheLayout::Single, Some(CacheLocation::Od)),
            (_, Loc::Md) => (CacheLayout::Single, Some(CacheLocation::Md)),
            (_, Loc::Id) => (CacheLayout::Single, Some(CacheLocation::Id)),
        };
        v.push(cat("cache.layout", Some(layout), r.cache.layout));
        v.push(cat("cache.location", location, r.cache.location));
    }
    if cfg.cleaning == Cleaning::Aggressive {
        let want = cfg.idle_before_cleaning as f64 / 1e9;
        v.push(size(
            "cleaning.idle_delay_s",
            Some(want),
            r.cleaning.idle_delay_s,
            0.05,
        ));
        if journal {
            v.push(cat(
                "cleaning.algorithm",
                Some("fifo".to_string()),
                r.cleaning.algorithm.clone(),
            ));
        }
    }
    let j = r.journal.as_ref();
    // The cache's usable bytes (which differ by translation layer) and its raw bytes.
    let cache_sizes = |usable: f64| {
        [
            size(
                "cache.usable_bytes",
                Some(usable),
                r.cache.usable_bytes.map(|x| x as f64),
                0.05,
            ),
            size(
                "cache.raw_bytes",
                Some(cfg.cache_size as f64),
                r.cache.raw_bytes.map(|x| x as f64),
                0.05,
            ),
        ]
    };
    if journal {
        v.push(size(
            "journal.entry_min_bytes",
            Some(cfg.journal_entry_min as f64),
            j.and_then(|j| j.entry_min_bytes).map(|x| x as f64),
            0.05,
        ));
        v.push(size(
            "journal.entry_quantum_bytes",
            Some(cfg.journal_entry_quantum as f64),
            j.and_then(|j| j.entry_quantum_bytes).map(|x| x as f64),
            0.05,
        ));
        v.push(size(
            "journal.oob_bytes",
            Some(cfg.journal_oob as f64),
            j.and_then(|j| j.oob_bytes).map(|x| x as f64),
            0.05,
        ));
        if cfg.map_merge_every > 0 {
            v.push(cat(
                "journal.map_merge_every",
                Some(cfg.map_merge_every),
                j.and_then(|j| j.map_merge_every),
            ));
        }
        v.push(size(
            "cache.map_entries",
            Some(cfg.map_entries as f64),
            r.cache.map_entries.map(|x| x as f64),
            0.05,
        ));
        // Usable: what full entries hold before the cleaning watermark.
        let emax = cfg.journal_entry_max as f64;
        let usable = cfg.cache_size as f64 * (1.0 - cfg.cache_low_watermark) * emax
            / (emax + cfg.journal_oob as f64);
        v.extend(cache_sizes(usable));
    } else {
        v.extend(cache_sizes(cfg.cache_size as f64));
        if !full {
            v.push(size(
                "cache.map_entries",
                Some(cfg.cache_size as f64 / ss),
                r.cache.map_entries.map(|x| x as f64),
                0.05,
            ));
        }
    }
    // Band sizes where the prober measured them.
    let (_, lay) = layout::build(&DmConfig {
        store_data: false,
        ..cfg.clone()
    })
    .unwrap();
    if r.band_size_bytes.is_empty() {
        v.push(size(
            "band_size_bytes",
            Some(cfg.band_size.max(1) as f64),
            None,
            0.05,
        ));
    }
    for b in &r.band_size_bytes {
        let lba = (b.offset / 4096 + 8).min(lay.capacity() - 1);
        let want = lay.logical_len(lay.band_of(lba)) as f64 * ss;
        v.push(size(
            "band_size_bytes",
            Some(want),
            Some(b.bytes as f64),
            0.05,
        ));
    }
    v.into_iter().flatten().collect()
}

fn checks_cmr(cfg: &DiskConfig, r: &Report) -> Vec<Check> {
    vec![
        cat("drive_type", Some(DriveType::Cmr), r.drive_type),
        cat(
            "volatile_cache",
            Some(cfg.cache.write_cache),
            r.volatile_cache,
        ),
        cat(
            "zones.surfaces",
            Some(cfg.media.heads),
            r.zones.as_ref().and_then(|z| z.surfaces),
        ),
        cat(
            "zones.layout",
            Some(if cfg.media.serpentine {
                ZoneLayout::Serpentine
            } else {
                ZoneLayout::SurfaceStrokes
            }),
            r.zones.as_ref().and_then(|z| z.layout),
        ),
        Some(Check {
            property: "cache (all null on CMR)",
            expected: "null".into(),
            got: format!("{:?}", r.cache.media),
            answered: true,
            right: r.cache.media.is_none()
                && r.cache.usable_bytes.is_none()
                && r.band_size_bytes.is_empty(),
        }),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A random drive-managed configuration (every STL, cache medium and location, both cleaning
/// types and idle delays, bands of 8-64 MiB, cache and map sizes, entry quanta, volatile
/// cache on and off).
fn random_dm(rng: &mut rand::rngs::SmallRng, i: usize) -> DmConfig {
    loop {
        let stl = [
            StlKind::Journal,
            StlKind::SetAssociative,
            StlKind::FullyAssociative,
        ][i % 3];
        let mib = 1u64 << 20;
        let gib = 1u64 << 30;
        let mut c = DmConfig {
            media: if rng.gen_bool(0.7) {
                "smr-5900".into()
            } else {
                "hm-smr".into()
            },
            capacity: rng.gen_range(200..1000) * gib,
            stl,
            band_size: rng.gen_range(8..=64) * mib,
            cleaning: if rng.gen_bool(0.5) {
                Cleaning::Aggressive
            } else {
                Cleaning::Lazy
            },
            idle_before_cleaning: rng.gen_range(5..=40) * 100_000_000,
            volatile_cache: rng.gen_bool(0.3),
            store_data: false,
            seed: i as u64,
            ..DmConfig::default()
        };
        match stl {
            StlKind::Journal => {
                if rng.gen_bool(0.25) {
                    c.band_size = 0;
                    c.band_tracks = rng.gen_range(8..=24);
                }
                c.cache_location = [Loc::Od, Loc::Md, Loc::Id][rng.gen_range(0..3)];
                c.cache_size = rng.gen_range(8..=40) * gib;
                c.map_entries = rng.gen_range(20..=250) * 1000;
                c.journal_entry_min = [512 * 1024, mib, 2 * mib][rng.gen_range(0..3)];
                c.journal_entry_quantum = [512 * 1024, mib][rng.gen_range(0..2)];
                c.journal_entry_max =
                    c.journal_entry_min + c.journal_entry_quantum * rng.gen_range(3..=6);
                c.journal_oob = rng.gen_range(2..=8) * 512 * 1024;
                c.map_merge_every = [0, 120, 240, 500][rng.gen_range(0..4)];
            }
            StlKind::SetAssociative => {
                if rng.gen_bool(0.35) {
                    c.cache_media = Med::Flash;
                } else {
                    c.cache_location = [Loc::Od, Loc::Md, Loc::Id][rng.gen_range(0..3)];
                }
                c.cache_size = rng.gen_range(2..=10) * gib;
            }
            StlKind::FullyAssociative => {
                c.mapping = tegula_stl::Mapping::Dynamic;
                c.cache_location = Loc::Distributed;
                c.zone_size = rng.gen_range(8..=40) * gib;
                c.cache_size = rng.gen_range(4..=16) * gib;
            }
        }
        if c.validate().is_ok() && DmDrive::new(c.clone()).is_ok() {
            return c;
        }
    }
}

fn cmr_configs() -> Vec<(String, DiskConfig)> {
    let mut out = Vec::new();
    for (rpm, heads, cap) in [
        (7200u32, 10u32, 0u64),
        (5400, 6, 500),
        (10000, 4, 300),
        (15000, 8, 600),
        (5900, 12, 1000),
    ] {
        let mut c = tegula_device::profile("cmr-7200").unwrap();
        c.store_data = false;
        if cap > 0 {
            c.capacity = cap * 1_000_000_000;
        }
        c.media.rpm = rpm;
        c.media.heads = heads;
        if c.validate().is_ok() {
            out.push((
                format!(
                    "cmr {rpm} rpm, {heads} heads, {} GB",
                    c.capacity / 1_000_000_000
                ),
                c,
            ));
        }
    }
    out
}

fn describe(c: &DmConfig) -> String {
    format!(
        "{:?} {} {:?}/{:?} {:.0} GiB, band {} MiB, {:?} {:.1}s, vc {}, {} GB",
        c.stl,
        c.media,
        c.cache_media,
        c.cache_location,
        c.cache_size as f64 / (1u64 << 30) as f64,
        c.band_size >> 20,
        c.cleaning,
        c.idle_before_cleaning as f64 / 1e9,
        c.volatile_cache,
        c.capacity / 1_000_000_000
    )
}

/// Prints the per-property accuracy table; returns (right, answered, total) over all checks.
fn table(rows: &[(String, Vec<Check>)]) -> (usize, usize, usize) {
    let mut props: Vec<&'static str> = Vec::new();
    for (_, cs) in rows {
        for c in cs {
            if !props.contains(&c.property) {
                props.push(c.property);
            }
        }
    }
    println!("\n| property | drives | right | wrong | null |\n| --- | --- | --- | --- | --- |");
    let (mut r, mut a, mut t) = (0, 0, 0);
    for p in props {
        let cs: Vec<&Check> = rows
            .iter()
            .flat_map(|x| x.1.iter())
            .filter(|c| c.property == p)
            .collect();
        let right = cs.iter().filter(|c| c.right).count();
        let null = cs.iter().filter(|c| !c.answered).count();
        println!(
            "| {p} | {} | {right} | {} | {null} |",
            cs.len(),
            cs.len() - right - null
        );
        r += right;
        a += cs.len() - null;
        t += cs.len();
    }
    println!("\nwrong or null answers:");
    for (name, cs) in rows {
        for c in cs.iter().filter(|c| !c.right) {
            println!(
                "  {name}: {} expected {} got {}",
                c.property, c.expected, c.got
            );
        }
    }
    println!("\nall: {r} right of {t} checks ({a} answered)");
    (r, a, t)
}

fn matrix() -> bool {
    std::env::var("TEGULA_PROBE_MATRIX").is_ok_and(|v| v == "1")
}

#[test]
fn a_small_journal_drive_is_recognised_in_tests_1_to_3() {
    let cfg = DmConfig {
        capacity: 200 << 30,
        cache_size: 8 << 30,
        map_entries: 20_000,
        cache_location: Loc::Id,
        idle_before_cleaning: 1_500_000_000,
        store_data: false,
        ..DmConfig::default()
    };
    let r = probe_dm(&cfg, "1-3");
    let cs = checks_dm(&cfg, &r);
    for p in [
        "drive_type",
        "cache.media",
        "cache.layout",
        "cache.location",
        "cleaning.kind",
        "cleaning.idle_delay_s",
        "journal.entry_min_bytes",
        "journal.entry_quantum_bytes",
        "journal.map_merge_every",
    ] {
        let c = cs.iter().find(|c| c.property == p).unwrap();
        assert!(c.right, "{p}: expected {} got {}", c.expected, c.got);
    }
    // Tests not run leave their properties null, with a reason.
    assert!(r.cache.usable_bytes.is_none());
    let p = r.property("cache.usable_bytes").unwrap();
    assert!(p.value.is_null() && p.evidence.contains("not run"), "{p:?}");
}

#[test]
fn a_conventional_drive_has_no_cache_and_shows_its_surfaces() {
    let mut cfg = tegula_device::profile("cmr-7200").unwrap();
    cfg.capacity = 200_000_000_000;
    cfg.store_data = false;
    let r = probe_cmr(&cfg, "1,2,14");
    for c in checks_cmr(&cfg, &r) {
        assert!(
            c.right,
            "{}: expected {} got {}",
            c.property, c.expected, c.got
        );
    }
    let p = r.property("cache.location").unwrap();
    assert!(
        p.value.is_null() && p.evidence.contains("conventional"),
        "{p:?}"
    );
}

#[test]
fn shipped_drives_every_test() {
    if !matrix() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: set TEGULA_PROBE_MATRIX=1 (release build) for the shipped drives"
        );
        return;
    }
    let mut rows = Vec::new();
    for name in [
        "seagate-5tb",
        "seagate-8tb",
        "emulated-smr-1",
        "emulated-smr-2",
        "emulated-smr-3",
    ] {
        let cfg = tegula_stl::dm_profile(name).unwrap().unwrap();
        let t = std::time::Instant::now();
        let r = probe_dm(&cfg, "");
        println!("{name}: {:.1} s wall", t.elapsed().as_secs_f64());
        rows.push((name.to_string(), checks_dm(&cfg, &r)));
    }
    let (right, _, total) = table(&rows);
    assert!(right * 100 >= total * 95, "{right} of {total}");
}

#[test]
fn generated_matrix_of_drives() {
    if !matrix() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: set TEGULA_PROBE_MATRIX=1 (release build) for the matrix of 33 drives"
        );
        return;
    }
    let mut rng = rand::rngs::SmallRng::seed_from_u64(2015);
    let mut rows = Vec::new();
    for i in 0..33 {
        let cfg = random_dm(&mut rng, i);
        let t = std::time::Instant::now();
        let r = probe_dm(&cfg, "");
        let name = format!("#{i} {}", describe(&cfg));
        println!("{name}: {:.1} s wall", t.elapsed().as_secs_f64());
        rows.push((name, checks_dm(&cfg, &r)));
    }
    for (name, cfg) in cmr_configs() {
        let r = probe_cmr(&cfg, "");
        rows.push((name, checks_cmr(&cfg, &r)));
    }
    let (right, answered, total) = table(&rows);
    // Wrong answers (not nulls) are what the rules forbid most.
    assert!(
        answered - right <= total / 10,
        "{} wrong of {total}",
        answered - right
    );
    assert!(right * 100 >= total * 80, "{right} of {total}");
}
