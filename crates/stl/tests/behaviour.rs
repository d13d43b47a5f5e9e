//! The signatures Skylight measured, in modelled time, on drives configured from
//! `crates/stl/profiles/`: fixed QD1 write latency with periodic map merges on the journal drive
//! (varying latency on a CMR drive), packing at queue depth 31, idle-time cleaning only on
//! aggressive drives, and fragmented reads that are slow until cleaned.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tegula_device::media::Request;
use tegula_device::{profile, BlockDevice, Disk, MS, SEC};
use tegula_stl::DmDrive;

fn drive(name: &str) -> DmDrive {
    let path = format!("{}/profiles/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("config file");
    DmDrive::from_toml(&text).expect("drive")
}

fn stats(v: &[u64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

#[test]
fn qd1_random_writes_have_fixed_latency_and_a_map_merge_every_240th() {
    let d = drive("seagate-5tb.toml");
    let cap = d.info().capacity_sectors;
    let mut rng = SmallRng::seed_from_u64(1);
    let buf = vec![0u8; 4096];
    let lat: Vec<u64> = (0..500)
        .map(|_| {
            d.write(rng.gen_range(0..cap), &buf)
                .expect("write")
                .service()
        })
        .collect();
    let merges: Vec<usize> = (0..lat.len()).filter(|&i| lat[i] > 200 * MS).collect();
    assert_eq!(merges, vec![239, 479], "map merges every 240th write");
    for &i in &merges {
        let ms = lat[i] as f64 / MS as f64;
        assert!((250.0..450.0).contains(&ms), "merge latency {ms} ms");
    }
    let normal: Vec<u64> = (1..lat.len())
        .filter(|i| !merges.contains(i))
        .map(|i| lat[i])
        .collect();
    let (mean, sd) = stats(&normal);
    let mean_ms = mean / MS as f64;
    assert!((20.0..32.0).contains(&mean_ms), "QD1 latency {mean_ms} ms");
    assert!(
        sd / mean < 0.1,
        "journal latency should be fixed: sd {sd} mean {mean}"
    );

    // A CMR drive with its volatile cache off: seeks and rotation make latency vary.
    let mut cfg = profile("cmr-7200").expect("profile");
    cfg.capacity = 64 << 30;
    cfg.store_data = false;
    cfg.cache.write_cache = false;
    let cmr = Disk::in_memory(cfg).expect("cmr");
    let gib = (1u64 << 30) / 4096;
    let lat: Vec<u64> = (0..500)
        .map(|_| {
            cmr.write(rng.gen_range(0..gib), &buf)
                .expect("write")
                .service()
        })
        .collect();
    let (mean, sd) = stats(&lat);
    assert!(
        sd / mean > 0.2,
        "CMR latency should vary: sd {sd} mean {mean}"
    );
}

#[test]
fn queue_depth_31_packs_writes_into_fewer_journal_entries() {
    let cap_of = |d: &DmDrive| d.info().capacity_sectors;
    let buf = vec![0u8; 4096];
    let sync = drive("seagate-5tb.toml");
    let mut rng = SmallRng::seed_from_u64(2);
    let t0 = sync.now();
    for _ in 0..256 {
        sync.write(rng.gen_range(0..cap_of(&sync)), &buf)
            .expect("write");
    }
    let sync_ns = sync.now() - t0;
    let qd = drive("seagate-5tb.toml");
    let t0 = qd.now();
    for _ in 0..256usize.div_ceil(31) {
        let reqs = (0..31)
            .map(|_| Request::Write {
                lba: rng.gen_range(0..cap_of(&qd)),
                data: buf.clone(),
                fua: false,
            })
            .collect();
        for r in qd.submit(reqs) {
            r.expect("write");
        }
    }
    let qd_ns = qd.now() - t0;
    let (se, qe) = (
        sync.stl_stats().journal_entries,
        qd.stl_stats().journal_entries,
    );
    assert_eq!(se, 256);
    assert_eq!(qe, 9, "31 writes of 4 KiB fit one entry");
    assert!(
        qd_ns * 10 < sync_ns,
        "QD31 {} ms vs QD1 {} ms",
        qd_ns / MS,
        sync_ns / MS
    );
}

#[test]
fn a_drive_takes_no_more_queued_writes_together_than_ncq_holds() {
    // 64 small writes submitted at once: a SATA drive holds 32 commands (NCQ), so they
    // reach the journal as two batches of 32, two entries, never one entry of 64 extents.
    let d = drive("seagate-5tb.toml");
    let cap = d.info().capacity_sectors;
    let mut rng = SmallRng::seed_from_u64(5);
    let reqs = (0..64)
        .map(|_| Request::Write {
            lba: rng.gen_range(0..cap),
            data: vec![0u8; 4096],
            fua: false,
        })
        .collect();
    for r in d.submit(reqs) {
        r.expect("write");
    }
    assert_eq!(d.stl_stats().journal_entries, 2);
    assert_eq!(tegula_stl::NCQ_DEPTH, 32);
}

#[test]
fn aggressive_drives_clean_after_the_idle_delay_and_lazy_ones_only_when_full() {
    let d = drive("seagate-5tb.toml");
    let cap = d.info().capacity_sectors;
    let mut rng = SmallRng::seed_from_u64(3);
    for _ in 0..50 {
        d.write(rng.gen_range(0..cap), &[1u8; 4096]).expect("write");
    }
    d.idle(900 * MS);
    assert_eq!(
        d.stl_stats().bands_cleaned,
        0,
        "cleaning before the idle delay"
    );
    d.idle(5 * SEC);
    let s = d.stl_stats();
    assert!(
        s.bands_cleaned > 0,
        "no cleaning after the idle delay: {s:?}"
    );
    assert!(s.cleaning_ns > 0);

    let lazy = drive("emulated-smr-1.toml");
    let cap = lazy.info().capacity_sectors;
    for _ in 0..50 {
        lazy.write(rng.gen_range(0..cap), &[1u8; 4096])
            .expect("write");
    }
    lazy.idle(600 * SEC);
    assert_eq!(
        lazy.stl_stats().bands_cleaned,
        0,
        "a lazy drive cleaned in idle time"
    );
    // Fill one cache band: 1 MiB writes into data band 0 (cache band 0).
    let mib = vec![2u8; 1 << 20];
    for i in 0..48u64 {
        lazy.write((i % 10) * 256, &mib).expect("write");
    }
    assert!(
        lazy.stl_stats().bands_cleaned > 0,
        "a full cache band must be cleaned"
    );
}

fn fragmented_read_ms(d: &DmDrive, start: u64) -> f64 {
    let mut buf = vec![0u8; 4096];
    let t0 = d.now();
    for i in 0..1024 {
        d.read(start + i, &mut buf).expect("read");
    }
    (d.now() - t0) as f64 / MS as f64 / 1024.0
}

#[test]
fn a_fragmented_read_is_slow_until_cleaned() {
    let d = drive("seagate-5tb.toml");
    let start = d.info().capacity_sectors / 2;
    for i in 0..512 {
        d.write(start + 2 * i, &[3u8; 4096]).expect("write");
    }
    let before = fragmented_read_ms(&d, start);
    d.idle(10 * SEC);
    let s = d.stl_stats();
    assert!(s.bands_cleaned >= 1, "{s:?}");
    let after = fragmented_read_ms(&d, start);
    assert!(
        before > 5.0 * after,
        "fragmented {before:.2} ms/read vs cleaned {after:.2} ms/read"
    );
}

#[test]
fn set_associative_fragmented_reads_stay_slow_without_cleaning() {
    let d = drive("emulated-smr-1.toml");
    let start = d.info().capacity_sectors / 2;
    for i in 0..512 {
        d.write(start + 2 * i, &[3u8; 4096]).expect("write");
    }
    let before = fragmented_read_ms(&d, start);
    d.idle(5 * SEC);
    let after = fragmented_read_ms(&d, start);
    assert!(before > 2.0, "fragmented read {before} ms");
    assert!((after - before).abs() / before < 0.3, "{before} vs {after}");
    // A flash cache makes cache reads cheap, so the same read is much faster.
    let f = drive("emulated-smr-2.toml");
    for i in 0..512 {
        f.write(start + 2 * i, &[3u8; 4096]).expect("write");
    }
    let flash = fragmented_read_ms(&f, start);
    assert!(flash < before, "flash {flash} vs disk {before}");
}

#[test]
fn paced_mode_sleeps_the_modelled_service_time() {
    // What wall-clock tools over NBD see with `--paced`: a QD1 4 KiB random write to the 5 TB
    // journal drive takes its ~29 ms of modelled time in wall time too (a lower bound only:
    // sleeping never takes less).
    let d = drive("seagate-5tb.toml");
    d.set_clock(tegula_device::ClockMode::Paced);
    let cap = d.info().capacity_sectors;
    let t = std::time::Instant::now();
    let mut modelled = 0;
    for i in 0..4 {
        modelled += d
            .write((i * 7_919_993) % cap, &[0u8; 4096])
            .expect("write")
            .service();
    }
    let wall = t.elapsed().as_nanos() as u64;
    assert!(modelled > 80 * MS, "modelled {modelled}");
    assert!(
        wall >= modelled * 9 / 10,
        "paced: wall {wall} ns < modelled {modelled} ns"
    );
}

#[test]
fn fully_associative_remaps_a_band_written_in_order_without_copying() {
    // S-blocks: an update band that holds its whole logical band in order becomes the data
    // band (dynamic mapping) with no read-modify-write; a band written out of order is merged.
    let cfg = "kind = \"dm-smr\"\ncapacity = \"64MiB\"\nstl = \"fully-associative\"\nmapping = \"dynamic\"\n\
               cache_location = \"distributed\"\nband_size = \"4MiB\"\ncache_size = \"16MiB\"\nzone_size = \"32MiB\"\n\
               idle_before_cleaning = \"1s\"\n";
    let d = DmDrive::from_toml(cfg).expect("drive");
    let band = (4 << 20) / 4096u64;
    for i in 0..band / 256 {
        d.write(i * 256, &vec![1u8; 1 << 20]).expect("write");
    }
    d.idle(5 * SEC);
    let s = d.stl_stats();
    assert!(s.bands_cleaned >= 1, "{s:?}");
    assert_eq!(s.cleaning_bytes_written, 0, "in-order band copied: {s:?}");
    // Out of order: the second half first.
    for i in (0..band / 256).rev() {
        d.write(band + i * 256, &vec![2u8; 1 << 20]).expect("write");
    }
    d.idle(5 * SEC);
    let s = d.stl_stats();
    assert!(s.cleaning_bytes_written >= band * 4096, "{s:?}");
    let mut b = vec![0u8; 4096];
    d.read(band + 5, &mut b).expect("read");
    assert_eq!(b, vec![2u8; 4096]);
}

#[test]
fn a_metadata_only_drive_models_its_volatile_cache_as_one_that_keeps_data() {
    // The metadata-only drive's volatile cache keeps extents without their bytes and
    // destages zeros: the same writes and flushes cost the same modelled time and leave the
    // same translation-layer work as on a drive that keeps every byte.
    let text = |store: bool| {
        format!(
            "kind = \"dm-smr\"\nmedia = \"smr-5900\"\ncapacity = \"200GB\"\nstl = \"set-associative\"\nband_size = \"16MiB\"\ncache_size = \"2GiB\"\nvolatile_cache = true\nvolatile_cache_size = \"4MiB\"\nbypass_min = \"1MiB\"\nstore_data = {store}\n"
        )
    };
    let run = |store: bool| {
        let d = DmDrive::from_toml(&text(store)).expect("drive");
        let cap = d.info().capacity_sectors;
        let mut rng = SmallRng::seed_from_u64(9);
        let mut lat = Vec::new();
        for i in 0..400u64 {
            // Small random writes, and every tenth a run of 2 MiB that bypasses the cache.
            let (lba, len) = if i % 10 == 0 {
                (rng.gen_range(0..cap - 4096) / 8 * 8, 2 << 20)
            } else {
                (rng.gen_range(0..cap - 8), 4096 * rng.gen_range(1..8))
            };
            lat.push(d.write(lba, &vec![0u8; len]).expect("write").service());
            if i % 50 == 49 {
                lat.push(d.flush().expect("flush").service());
            }
        }
        let s = d.stl_stats();
        (
            lat,
            s.journal_entries,
            s.bands_cleaned,
            s.cleaning_bytes_written,
        )
    };
    let (kept, bare) = (run(true), run(false));
    assert!(kept.0.iter().any(|&l| l > 10 * MS), "the flushes did work");
    assert_eq!(kept, bare);
}
