//! Rules of the model that every figure relies on, checked over many operations: device time
//! never runs ahead of the work. A flush completes no earlier than the media writes it covers;
//! busy time never exceeds elapsed (virtual) time; no write stream is faster than the media.
#![allow(clippy::unwrap_used, missing_docs)]

use tegula_device::{
    profile, BlockDevice, Disk, DiskConfig, DriveKind, Nanos, Request, ZoneFilter, ZonedDevice,
};

/// A metadata-only drive of `name`'s mechanics as a plain block device.
fn block_drive(name: &str, cache: bool) -> (Disk, DiskConfig) {
    let mut c = profile(name).unwrap();
    c.store_data = false;
    c.kind = DriveKind::Cmr;
    c.cache.write_cache = cache;
    (Disk::in_memory(c.clone()).unwrap(), c)
}

/// The fastest the media can take data anywhere on the drive, in bytes per nanosecond: the
/// outermost track's sectors per revolution (no track switches counted, so a true bound).
fn max_media_bytes_per_ns(d: &Disk, c: &DiskConfig) -> f64 {
    let spt = d.with_media(|m| m.mechanics().geometry().locate(0).spt) as f64;
    let rev_ns = 60e9 / c.media.rpm as f64;
    spt * 4096.0 / rev_ns
}

fn assert_busy_within_elapsed(d: &Disk, what: &str) {
    let s = d.stats();
    assert!(
        s.busy_ns <= d.now(),
        "{what}: busy {} ns exceeds the virtual clock {} ns",
        s.busy_ns,
        d.now()
    );
}

/// Regression: `disk write --zone 1` of 1 MiB then a flush reported "+ flush 0.200 ms" while
/// the destage it covered was still under way (busy 15.0 ms against a clock of 2.9 ms): the
/// background destage had emptied the cache, and the flush did not wait for the media.
#[test]
fn flush_waits_for_a_background_destage_still_under_way() {
    let mut c = profile("hm-smr").unwrap();
    c.set("capacity", "\"4GiB\"").unwrap();
    let d = Disk::in_memory(c.clone()).unwrap();
    let z = d.report_zones(ZoneFilter::All)[1].clone();
    let w = d.write(z.start_lba, &vec![7u8; 1 << 20]).unwrap();
    let f = d.flush().unwrap();
    let lower = ((1u64 << 20) as f64 / max_media_bytes_per_ns(&d, &c)) as Nanos;
    assert!(
        f.end - w.start >= lower,
        "write + flush of 1 MiB took {} ns, less than its media time {lower} ns",
        f.end - w.start
    );
    assert_busy_within_elapsed(&d, "after the flush");
}

/// A flush after N bytes of cached writes completes no earlier than the media time of N bytes
/// after the first write arrived, for single commands and for a queued batch.
#[test]
fn a_flush_after_n_bytes_takes_at_least_their_media_time() {
    for name in ["cmr-7200", "hm-smr"] {
        for &kib in &[4u64, 64, 1024, 8192, 65536] {
            // Single commands, sequential, 256 KiB at most each.
            let (d, c) = block_drive(name, true);
            let rate = max_media_bytes_per_ns(&d, &c);
            let t0 = d.now();
            let mut lba = 1 << 20;
            let mut left = kib << 10;
            while left > 0 {
                let n = left.min(256 << 10);
                d.write(lba, &vec![1u8; n as usize]).unwrap();
                lba += n / 4096;
                left -= n;
            }
            let f = d.flush().unwrap();
            let lower = ((kib << 10) as f64 / rate) as Nanos;
            assert!(
                f.end - t0 >= lower,
                "{name}: {kib} KiB + flush in {} ns < media time {lower} ns",
                f.end - t0
            );
            assert_busy_within_elapsed(&d, name);

            // The same bytes as one queued batch with a flush at its end.
            let (d, _) = block_drive(name, true);
            let t0 = d.now();
            let per = (kib << 10).min(256 << 10);
            let mut reqs: Vec<Request> = (0..(kib << 10) / per)
                .map(|i| Request::Write {
                    lba: (1 << 20) + i * per / 4096,
                    data: vec![2u8; per as usize],
                    fua: false,
                })
                .collect();
            reqs.push(Request::Flush);
            let done = d.submit(reqs);
            let end = done.last().unwrap().as_ref().unwrap().done.end;
            assert!(
                end - t0 >= lower,
                "{name}: queued {kib} KiB + flush in {} ns < media time {lower} ns",
                end - t0
            );
            assert_busy_within_elapsed(&d, name);
        }
    }
}

/// Busy time never exceeds elapsed time, after any command of a random mix (cached and FUA
/// writes, reads, flushes, idle pauses, discards), with and without the write cache.
#[test]
fn busy_time_never_exceeds_elapsed_time() {
    for cache in [true, false] {
        let (d, _) = block_drive("cmr-7200", cache);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let span = 1u64 << 24; // LBAs (64 GiB)
        for i in 0..3000 {
            let lba = next() % span;
            let sectors = 1 + next() % 64;
            match next() % 10 {
                0..=3 => {
                    d.write(lba, &vec![0u8; sectors as usize * 4096]).unwrap();
                }
                4 => {
                    let flags = tegula_device::WriteFlags { fua: true };
                    d.write_with(lba, &vec![0u8; sectors as usize * 4096], flags)
                        .unwrap();
                }
                5 | 6 => {
                    let mut b = vec![0u8; sectors as usize * 4096];
                    d.read(lba, &mut b).unwrap();
                }
                7 => {
                    d.flush().unwrap();
                }
                8 => d.idle(next() % 20_000_000),
                _ => {
                    d.discard(lba, sectors).unwrap();
                }
            }
            assert_busy_within_elapsed(&d, &format!("cache {cache}, op {i}"));
        }
    }
}

/// No stream of writes made durable reaches the device faster than the media rate: user bytes
/// per device second, flush included, stay below the outermost track's rate.
#[test]
fn no_durable_write_stream_beats_the_media_rate() {
    for name in ["cmr-7200", "hm-smr"] {
        let (d, c) = block_drive(name, true);
        let rate = max_media_bytes_per_ns(&d, &c);
        let t0 = d.now();
        let bytes = 256u64 << 20;
        for i in 0..bytes / (1 << 20) {
            d.write(i * 256, &vec![0u8; 1 << 20]).unwrap();
        }
        let end = d.flush().unwrap().end;
        let got = bytes as f64 / (end - t0) as f64;
        assert!(
            got <= rate,
            "{name}: {:.1} MB/s durable, above the media's {:.1} MB/s",
            got * 1e3,
            rate * 1e3
        );
    }
}
