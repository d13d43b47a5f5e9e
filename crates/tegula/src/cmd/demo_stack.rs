//! The second half of `tegula demo`: the layers built on the emulated drives, each in a few
//! hundred milliseconds of wall time — SMRDB on a host-managed drive (puts, gets, a scan, the
//! engine's statistics against the media rate) and a drive-managed SMR drive (the journal STL's
//! fixed QD1 write latency with its periodic map merges, against a conventional drive's varying
//! latency, and idle-time cleaning). All figures are modelled device time.

use crate::output::{mb_s, ms};
use anyhow::{Context, Result};
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::Instant;
use tegula_device::{format_size, profile, BlockDevice, Disk, Nanos, MS, SEC};
use tegula_smrdb::{Db, FormatOptions, Options};
use tegula_stl::DmDrive;

/// The built-in journal drive: Skylight's 5 TB Seagate (Table III), metadata only.
const SEAGATE_5TB: &str = include_str!("../../../stl/profiles/seagate-5tb.toml");

/// Prints a numbered step header.
fn step(n: u32, title: &str) {
    println!("\n[{n}] {title}");
}

/// Runs the stack tour, numbering its steps from `first`.
pub fn run(first: u32) -> Result<()> {
    let wall = Instant::now();
    smrdb_tour(first)?;
    dm_smr_tour(first + 2)?;
    println!(
        "\n    wall time (stack tour): {:.3} s",
        wall.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Key `i` of the SMRDB tour (fixed width, so key order = numeric order).
fn key(i: u64) -> Vec<u8> {
    format!("user{i:012}").into_bytes()
}

fn smrdb_tour(n: u32) -> Result<()> {
    step(
        n,
        "SMRDB, the key-value engine on bands: 200,000 random puts, a flush, gets and a scan",
    );
    let mut cfg = profile("hm-smr")?;
    cfg.zones.zone_size = 16 << 20;
    cfg.capacity = 2 << 30;
    cfg.validate()?;
    let disk = Arc::new(Disk::in_memory(cfg)?);
    let media = disk.with_media(|m| m.mechanics().geometry().media_rate_at(0)) / 1e6;
    let db = Db::create(disk.clone(), FormatOptions::default(), Options::default())
        .context("creating SMRDB")?;
    let count = 200_000u64;
    let value = vec![b'v'; 100];
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let t0 = disk.now();
    for _ in 0..count {
        db.put(&key(rng.gen_range(0..count)), &value)?;
    }
    db.flush()?;
    db.wait_for_compactions()?;
    let put_ns = disk.now() - t0;
    let s = db.stats();
    println!(
        "    {count} puts of 16 B keys and 100 B values on an in-memory hm-smr drive (16 MiB bands)"
    );
    println!(
        "    modelled: {:.0} puts per device second, {} of user data in {}; the drive wrote \
         {:.1} MB/s ({:.0}% of the {media:.0} MB/s media rate at the outer zone)",
        count as f64 / (put_ns as f64 / SEC as f64),
        format_size(s.user_bytes),
        ms(put_ns),
        mb_s(device_written(&disk), put_ns),
        100.0 * device_written(&disk) as f64 / (put_ns as f64 / SEC as f64) / 1e6 / media,
    );
    println!(
        "    {} flushes, {} compactions ({} trivial moves), write amplification {:.2} \
         (log + flush + compaction bytes / user bytes), bands per level {:?}",
        s.flushes, s.compactions, s.trivial_moves, s.write_amplification, s.bands_per_level
    );

    let t1 = disk.now();
    let mut found = 0;
    for _ in 0..2_000 {
        if db.get(&key(rng.gen_range(0..count)))?.is_some() {
            found += 1;
        }
    }
    let get_ns = disk.now() - t1;
    let s = db.stats();
    println!(
        "    2,000 random gets: {found} found, {} per get on the device, {:.2} bands probed per get \
         (Bloom filters answer the rest)",
        ms(get_ns / 2_000),
        s.avg_bands_probed_per_get
    );
    let t2 = disk.now();
    let scanned = db
        .scan(&key(1_000), None)?
        .take(10_000)
        .collect::<Result<Vec<_>, _>>()?
        .len();
    println!(
        "    a scan of {scanned} keys from {}: {} on the device",
        String::from_utf8_lossy(&key(1_000)),
        ms(disk.now() - t2)
    );
    let report = db.check()?;
    println!(
        "    check: {} bands, {} entries verified, {}",
        report.bands,
        report.entries,
        if report.problems.is_empty() {
            "no problems".to_string()
        } else {
            report.problems.join("; ")
        }
    );
    db.close()?;

    step(
        n + 1,
        "SMRDB after a power cut: unsynced puts may go, synced ones survive",
    );
    let disk = Arc::new(Disk::in_memory({
        let mut c = profile("hm-smr")?;
        c.zones.zone_size = 16 << 20;
        c.capacity = 1 << 30;
        c
    })?);
    let db = Db::create(disk.clone(), FormatOptions::default(), Options::default())?;
    db.put(b"a", b"put before the synced batch")?;
    db.write(
        {
            let mut b = tegula_smrdb::WriteBatch::new();
            b.put(b"b", b"in the synced batch");
            b
        },
        tegula_smrdb::WriteOptions {
            sync: true,
            ..Default::default()
        },
    )?;
    db.put(b"c", b"put after it, not synced")?;
    disk.power_cut();
    drop(db);
    disk.power_on();
    let db = Db::open(disk.clone(), Options::default())?;
    println!("    put a, a synced batch with b, put c; cut the power; reopen (log replay):");
    for k in [&b"a"[..], b"b", b"c"] {
        println!(
            "      {} -> {}",
            String::from_utf8_lossy(k),
            match db.get(k)? {
                Some(v) => format!("{:?}", String::from_utf8_lossy(&v)),
                None => "gone (never acknowledged as durable: it sat in the log buffer)".into(),
            }
        );
    }
    db.close()?;
    Ok(())
}

/// Bytes the host has written to the drive so far.
fn device_written(disk: &Disk) -> u64 {
    disk.stats().bytes_written
}

fn dm_smr_tour(n: u32) -> Result<()> {
    step(
        n,
        "a drive-managed SMR drive (journal STL, Skylight's 5 TB Seagate) against a CMR drive",
    );
    let dm = DmDrive::from_toml(SEAGATE_5TB).context("building the built-in 5 TB drive")?;
    let mut cmr_cfg = profile("cmr-7200")?;
    cmr_cfg.cache.write_cache = false;
    let cmr = Disk::in_memory(cmr_cfg)?;
    let buf = vec![0u8; 4096];
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    let mut lat = |d: &dyn BlockDevice| -> Result<Vec<Nanos>> {
        let cap = d.info().capacity_sectors;
        (0..480)
            .map(|_| {
                d.write(rng.gen_range(0..cap), &buf)
                    .map(|x| x.service())
                    .map_err(anyhow::Error::from)
            })
            .collect()
    };
    let dm_lat = lat(&dm)?;
    let cmr_lat = lat(&cmr)?;
    let summary = |l: &[Nanos]| {
        let normal: Vec<f64> = l
            .iter()
            .filter(|&&x| x < 200 * MS)
            .map(|&x| x as f64 / MS as f64)
            .collect();
        let mean = normal.iter().sum::<f64>() / normal.len().max(1) as f64;
        let sd = (normal.iter().map(|x| (x - mean).powi(2)).sum::<f64>()
            / normal.len().max(1) as f64)
            .sqrt();
        let slow: Vec<String> = l
            .iter()
            .enumerate()
            .filter(|(_, &x)| x >= 200 * MS)
            .map(|(i, &x)| format!("#{} {}", i + 1, ms(x)))
            .collect();
        (mean, sd, slow)
    };
    let (m, sd, slow) = summary(&dm_lat);
    println!("    480 random 4 KiB writes at queue depth 1 (write cache off):");
    println!(
        "      dm-smr:   {m:.2} ms ± {sd:.2} ms each (one 2.5-track journal write), and {} map merges: {}",
        slow.len(),
        slow.join(", ")
    );
    let (m, sd, _) = summary(&cmr_lat);
    println!("      cmr-7200: {m:.2} ms ± {sd:.2} ms each (seek + rotation: varies with the LBA)");
    let st = dm.stl_stats();
    println!(
        "      journal: {} entries, {} map entries, {} of persistent cache used",
        st.journal_entries,
        st.map_entries,
        format_size(st.cache_used_bytes)
    );
    let t0 = dm.now();
    let mut waited = 0;
    while dm.stl_stats().bands_cleaned == 0 && waited < 50 {
        dm.idle(100 * MS);
        waited += 1;
    }
    let first = dm.now() - t0;
    dm.idle(5 * SEC);
    let st = dm.stl_stats();
    println!(
        "    then the host goes idle: the drive waits its 1 s idle delay and starts cleaning \
         (first band done {} into the idle period); after 5 s more it has cleaned {} bands \
         in FIFO order ({} read, {} written, {} of cleaning)",
        ms(first),
        st.bands_cleaned,
        format_size(st.cleaning_bytes_read),
        format_size(st.cleaning_bytes_written),
        ms(st.cleaning_ns)
    );
    Ok(())
}
