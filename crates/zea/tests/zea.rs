//! ZEA behaviour through the emulated host-managed drive: round trips, exact-extent gets,
//! rediscovery in both directions, power cuts at random points, and corruption.
#![allow(clippy::unwrap_used)]

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use tegula_device::{profile, BlockDevice, Disk, ZonedDevice};
use tegula_zea::{Options, Zea, ZeaError};

fn disk() -> Arc<Disk> {
    disk_with_cache(true)
}

fn disk_with_cache(write_cache: bool) -> Arc<Disk> {
    let mut cfg = profile("hm-smr").unwrap();
    cfg.cache.write_cache = write_cache;
    cfg.capacity = 64 << 20;
    cfg.zones.zone_size = 4 << 20;
    cfg.zones.conventional_zones = Some(1);
    Arc::new(Disk::in_memory(cfg).unwrap())
}

fn zoned(d: &Arc<Disk>) -> Arc<dyn ZonedDevice> {
    d.clone()
}

fn payload(rng: &mut SmallRng, max: usize) -> Vec<u8> {
    let n = rng.gen_range(1..=max);
    (0..n).map(|_| rng.gen()).collect()
}

#[test]
fn put_then_get_round_trips_and_survives_reopen() {
    let d = disk();
    let mut rng = SmallRng::seed_from_u64(1);
    let mut z = Zea::open(zoned(&d), 2, Options::default()).unwrap();
    let mut placed = Vec::new();
    for i in 0..40 {
        let data = payload(&mut rng, 40_000);
        let p = z.put(1000 + i, &data).unwrap();
        assert_eq!(p.seq, i);
        placed.push((p, data));
    }
    for (p, data) in &placed {
        assert_eq!(&z.get(p.lba, p.len).unwrap(), data);
    }
    let z2 = Zea::open(zoned(&d), 2, Options::default()).unwrap();
    assert_eq!(z2.write_pointer(), z.write_pointer());
    assert_eq!(z2.recovery().torn_sectors, 0);
    for (p, data) in &placed {
        assert_eq!(&z2.get(p.lba, p.len).unwrap(), data);
    }
}

/// Puts through reused buffers (`put_via`, the buffers the device gives back, some of them
/// left dirty by earlier extents and larger than the next) write the same bytes to the
/// media as plain puts, with and without the drive's write cache keeping them.
#[test]
fn puts_through_reused_buffers_write_the_same_bytes_as_plain_puts() {
    for cache in [true, false] {
        let (a, b) = (disk_with_cache(cache), disk_with_cache(cache));
        let mut za = Zea::open(zoned(&a), 2, Options::default()).unwrap();
        let mut zb = Zea::open(zoned(&b), 2, Options::default()).unwrap();
        let mut rng = SmallRng::seed_from_u64(9);
        let mut buf = vec![0xEEu8; 300_000];
        let mut reused = 0;
        for i in 0..24 {
            // Large extents (kept by the cache) and small ones (copied by it) in turn.
            let data = payload(&mut rng, if i % 2 == 0 { 200_000 } else { 3_000 });
            let pa = za.put_tagged(i, 7, &data).unwrap();
            let (pb, back) = zb.put_via(i, 7, &data, std::mem::take(&mut buf)).unwrap();
            assert_eq!(pa, pb);
            buf = back;
            if buf.capacity() > 0 {
                reused += 1;
                buf.resize(buf.capacity(), 0xAB);
            }
        }
        assert!(reused > 0, "no buffer came back (write cache {cache})");
        a.flush().unwrap();
        b.flush().unwrap();
        let end = za.write_pointer();
        assert_eq!(end, zb.write_pointer());
        let start = za.start_lba();
        let sectors = (end - start) as usize;
        let ss = za.sector_size() as usize;
        let mut ra = vec![0u8; sectors * ss];
        let mut rb = vec![1u8; sectors * ss];
        a.read(start, &mut ra).unwrap();
        b.read(start, &mut rb).unwrap();
        assert!(ra == rb, "the media differ (write cache {cache})");
        let reopened = Zea::open(zoned(&b), 2, Options::default()).unwrap();
        assert_eq!(reopened.write_pointer(), end);
        assert_eq!(reopened.recovery().torn_sectors, 0);
    }
}

#[test]
fn get_refuses_anything_but_an_exact_extent() {
    let d = disk();
    let mut z = Zea::open(zoned(&d), 3, Options::default()).unwrap();
    let a = z.put(1, &[1u8; 5000]).unwrap();
    let b = z.put(2, &[2u8; 9000]).unwrap();
    assert!(z.get(a.lba, 5000).is_ok());
    for (lba, len) in [
        (a.lba, 4999),
        (a.lba, 5001),
        (a.lba, 9000),
        (a.lba + 1, 4096),
        (b.lba, 5000),
        (b.lba + 3, 1),
        (b.meta_lba, 4096),
        (0, 4096),
        (u64::MAX - 1, u64::MAX),
    ] {
        match z.get(lba, len) {
            Err(ZeaError::NotAnExtent { .. }) | Err(ZeaError::BadMeta { .. }) => {}
            other => panic!("get({lba}, {len}) = {other:?}"),
        }
    }
}

#[test]
fn ranges_read_only_the_covering_chunks_and_match_the_data() {
    let d = disk();
    let mut rng = SmallRng::seed_from_u64(2);
    let mut z = Zea::open(zoned(&d), 4, Options::default()).unwrap();
    let data = payload(&mut rng, 1);
    let data = [data, (0..3_000_000).map(|_| rng.gen()).collect()].concat();
    let p = z.put(0, &data).unwrap();
    let m = z.read_meta(p.lba, p.len).unwrap();
    assert!(m.chunk_bytes >= 4096);
    for _ in 0..200 {
        let off = rng.gen_range(0..data.len() as u64);
        let n = rng.gen_range(1..=(data.len() as u64 - off).min(100_000));
        let got = z.read_range(&m, off, n).unwrap();
        assert_eq!(got, &data[off as usize..(off + n) as usize]);
    }
    assert!(z.read_range(&m, data.len() as u64, 1).is_err());
    assert!(z.read_range(&m, 0, 0).is_err());
}

#[test]
fn iterators_rediscover_every_extent_in_write_order() {
    for back in [1u16, 2, 3, 8, 32] {
        let d = disk();
        let opts = Options {
            back_pointers: back,
            ..Options::default()
        };
        let mut rng = SmallRng::seed_from_u64(back as u64);
        let mut z = Zea::open(zoned(&d), 5, opts.clone()).unwrap();
        let mut placed = Vec::new();
        for i in 0..100u64 {
            let data = payload(&mut rng, 20_000);
            placed.push(z.put(i * 7, &data).unwrap());
        }
        let z = Zea::open(zoned(&d), 5, opts).unwrap();
        let fwd = z.iter_forward();
        let expect_reads = 100u64.div_ceil(back as u64) + 1;
        assert!(
            fwd.skip_reads() <= expect_reads,
            "{back}: {}",
            fwd.skip_reads()
        );
        let fwd: Vec<_> = fwd.map(|m| m.unwrap()).collect();
        assert_eq!(fwd.len(), 100);
        for (i, (m, p)) in fwd.iter().zip(&placed).enumerate() {
            assert_eq!(
                (m.data_lba, m.data_len, m.seq, m.zba),
                (p.lba, p.len, i as u64, i as u64 * 7)
            );
        }
        let bwd: Vec<_> = z.iter_back().map(|m| m.unwrap()).collect();
        let mut rev = fwd.clone();
        rev.reverse();
        assert_eq!(bwd, rev);
    }
}

#[test]
fn empty_zone_has_no_extents_and_reset_empties_a_zone() {
    let d = disk();
    let mut z = Zea::open(zoned(&d), 6, Options::default()).unwrap();
    assert_eq!(z.iter_forward().count(), 0);
    assert_eq!(z.iter_back().count(), 0);
    z.put(1, b"abc").unwrap();
    z.reset().unwrap();
    assert_eq!(z.iter_forward().count(), 0);
    let p = z.put(2, b"def").unwrap();
    assert_eq!(p.seq, 0);
    assert_eq!(p.lba, z.start_lba());
}

#[test]
fn a_full_zone_refuses_the_put_and_keeps_its_extents() {
    let d = disk();
    let mut z = Zea::open(zoned(&d), 7, Options::default()).unwrap();
    let big = vec![9u8; (z.max_put() - 2 * 4096) as usize];
    let p = z.put(1, &big).unwrap();
    assert!(matches!(
        z.put(2, &[0u8; 8192]),
        Err(ZeaError::NoSpace { .. })
    ));
    let q = z.put(3, &[1u8; 10]).unwrap();
    assert_eq!(z.free_sectors(), 0);
    assert!(matches!(z.put(4, b"x"), Err(ZeaError::NoSpace { .. })));
    assert_eq!(z.get(p.lba, p.len).unwrap(), big);
    assert_eq!(z.get(q.lba, 10).unwrap(), vec![1u8; 10]);
}

#[test]
fn crash_at_random_points_loses_nothing_acknowledged_and_ignores_the_torn_extent() {
    let mut rng = SmallRng::seed_from_u64(42);
    let mut torn_seen = 0;
    for round in 0..60u64 {
        let d = disk();
        let zone = 2 + (round % 10) as u32;
        let mut z = Zea::open(zoned(&d), zone, Options::default()).unwrap();
        let mut acked = Vec::new();
        let mut puts = 0u64;
        // Several crash/recover cycles in the same zone.
        for cycle in 0..3u64 {
            d.arm_power_cut(rng.gen_range(1..12), round * 10 + cycle);
            let mut in_flight = None;
            loop {
                let data = payload(&mut rng, 60_000);
                match z.put(puts, &data) {
                    Ok(p) => acked.push((p, data)),
                    Err(ZeaError::NoSpace { .. }) => break,
                    Err(_) => {
                        in_flight = Some(data);
                        break;
                    }
                }
                puts += 1;
            }
            d.power_on();
            z = Zea::open(zoned(&d), zone, Options::default()).unwrap();
            torn_seen += (z.recovery().torn_sectors > 0) as u32;
            let found: Vec<_> = z.iter_forward().map(|m| m.unwrap()).collect();
            // The put that failed with the power loss may or may not have reached the media.
            if found.len() == acked.len() + 1 {
                let m = &found[acked.len()];
                let data = in_flight
                    .take()
                    .expect("an extra extent needs a put in flight");
                assert_eq!(z.get(m.data_lba, m.data_len).unwrap(), data);
                let p = tegula_zea::Placed {
                    lba: m.data_lba,
                    len: m.data_len,
                    meta_lba: m.meta_lba,
                    seq: m.seq,
                };
                acked.push((p, data));
            }
            assert_eq!(found.len(), acked.len(), "round {round} cycle {cycle}");
            for (m, (p, data)) in found.iter().zip(&acked) {
                assert_eq!((m.data_lba, m.data_len), (p.lba, p.len));
                assert_eq!(&z.get(p.lba, p.len).unwrap(), data);
            }
            let back = z.iter_back().count();
            assert_eq!(back, acked.len());
        }
    }
    assert!(torn_seen > 10, "torn tails recovered: {torn_seen}");
}

#[test]
fn a_corrupt_metadata_block_loses_one_extent_and_iteration_goes_on() {
    let d = disk();
    let mut z = Zea::open(zoned(&d), 8, Options::default()).unwrap();
    let mut placed = Vec::new();
    for i in 0..20 {
        placed.push(z.put(i, &vec![i as u8; 6000]).unwrap());
    }
    d.inject_media_error(placed[10].meta_lba, 1).unwrap();
    let z = Zea::open(zoned(&d), 8, Options::default()).unwrap();
    let fwd: Vec<_> = z.iter_forward().collect();
    assert_eq!(fwd.iter().filter(|r| r.is_ok()).count(), 19);
    assert_eq!(fwd.iter().filter(|r| r.is_err()).count(), 1);
    let bwd: Vec<_> = z.iter_back().collect();
    assert_eq!(bwd.iter().filter(|r| r.is_ok()).count(), 19);
    assert!(z.get(placed[10].lba, 6000).is_err());
    assert!(z.get(placed[11].lba, 6000).is_ok());
}

#[test]
fn a_corrupt_data_sector_fails_the_checksum_naming_zone_and_offset() {
    let d = disk();
    let mut z = Zea::open(zoned(&d), 9, Options::default()).unwrap();
    let p = z.put(1, &[7u8; 20_000]).unwrap();
    // Rewrite the data with other bytes behind ZEA's back through the media.
    let ss = 4096usize;
    let mut raw = vec![0u8; 5 * ss + ss];
    d.read(p.lba, &mut raw).unwrap();
    raw[100] ^= 0xff;
    d.with_media(|m| m.write(p.lba, &raw[..ss], true)).unwrap();
    match z.get(p.lba, p.len) {
        Err(e @ ZeaError::Checksum { .. }) => {
            let s = e.to_string();
            assert!(s.contains("zone 9") && s.contains("offset 0"), "{s}");
        }
        other => panic!("{other:?}"),
    }
    let m = z.read_meta(p.lba, p.len).unwrap();
    assert!(z.read_range(&m, 0, 10).is_err());
    assert_eq!(z.read_range(&m, 8192, 10).unwrap(), vec![7u8; 10]);
}

#[test]
fn conventional_zones_are_refused() {
    let d = disk();
    assert!(matches!(
        Zea::open(zoned(&d), 0, Options::default()),
        Err(ZeaError::BadZone { .. })
    ));
}
