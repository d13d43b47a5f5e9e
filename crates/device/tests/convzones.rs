//! Conventional zones emulated in the sequential zones of a ZNS-like drive (`ConvZones`):
//! every read equals a reference model through many cleanings and reopens; power cuts lose
//! nothing that was flushed; a damaged record below the write pointer refuses the open; a torn
//! tail is ignored and cleaned; the zone rules hold through the adapter.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::SS;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::Arc;
use tegula_device::conformance::{self, Outcome};
use tegula_device::convzones::record::Header;
use tegula_device::{
    profile, BlockDevice, ConvZones, DeviceError, Disk, ZoneCondition, ZoneFilter, ZonedDevice,
};

/// A tiny ZNS drive: 48 zones of 1 MiB with 768 KiB capacity, open/active limits 6.
fn zns(cache: bool, seed: u64) -> Arc<Disk> {
    let mut c = profile("zns").unwrap();
    c.set("capacity", "\"48MiB\"").unwrap();
    c.set("zones.zone_size", "\"1MiB\"").unwrap();
    c.set("zones.zone_capacity", "\"768KiB\"").unwrap();
    c.zones.max_open = 6;
    c.zones.max_active = 6;
    c.cache.write_cache = cache;
    c.cache.size = 64 * SS as u64;
    c.seed = seed;
    Arc::new(Disk::in_memory(c).unwrap())
}

fn sector(tag: u32, v: u64) -> Vec<u8> {
    let mut s = vec![(tag as u8) ^ (v as u8); SS];
    s[..4].copy_from_slice(&tag.to_le_bytes());
    s[4..12].copy_from_slice(&v.to_le_bytes());
    s
}

fn check_all(dev: &ConvZones, model: &HashMap<u64, u32>, sectors: u64) {
    let mut buf = vec![0u8; sectors as usize * SS];
    dev.read(0, &mut buf).unwrap();
    for v in 0..sectors {
        let got = &buf[v as usize * SS..(v as usize + 1) * SS];
        match model.get(&v) {
            Some(&tag) => assert_eq!(got, sector(tag, v).as_slice(), "sector {v}"),
            None => assert!(got.iter().all(|&b| b == 0), "sector {v} never written"),
        }
    }
}

#[test]
fn the_layout_shifts_sequential_zones_after_one_conventional_zone() {
    let inner = zns(true, 1);
    let d = ConvZones::open(inner.clone(), 1).unwrap();
    let info = d.info();
    let k = tegula_device::convzones::log_zones_for(256, 192);
    assert_eq!(k, 7);
    assert_eq!(info.conventional_zones, 1);
    assert_eq!(info.zones, 1 + 48 - k);
    assert_eq!((info.max_open_zones, info.max_active_zones), (5, 5));
    assert_eq!(info.zone_capacity_sectors, 192);
    let zones = d.report_zones(ZoneFilter::All);
    assert_eq!(zones[0].condition, ZoneCondition::NotWritePointer);
    assert_eq!(zones[1].start_lba, 256);
    // A sequential write lands in the device's zone k.
    d.append(1, &sector(1, 0)).unwrap();
    assert_eq!(
        inner.zone(k).unwrap().write_pointer_lba,
        u64::from(k) * 256 + 1
    );
    assert_eq!(d.zone(1).unwrap().write_pointer_lba, 257);
    // Resetting every zone never touches the log.
    d.write(5, &sector(2, 5)).unwrap();
    d.zone_action(
        tegula_device::ZoneAction::Reset,
        tegula_device::ZoneTarget::All,
    )
    .unwrap();
    let mut b = vec![0u8; SS];
    d.read(5, &mut b).unwrap();
    assert_eq!(b, sector(2, 5));
}

#[test]
fn random_overwrites_match_a_model_through_cleaning_and_reopens() {
    let inner = zns(false, 2);
    let mut dev = ConvZones::open(inner.clone(), 1).unwrap();
    let conv = 256u64;
    let mut model = HashMap::new();
    let mut rng = SmallRng::seed_from_u64(7);
    let mut resets_seen = 0;
    for step in 0..4000u32 {
        let n = if rng.gen_bool(0.1) {
            rng.gen_range(1..=40)
        } else {
            rng.gen_range(1..=3)
        };
        // Hot and cold sectors, so that cleaning finds zones with little live data.
        let v = if rng.gen_bool(0.7) {
            rng.gen_range(0..16)
        } else {
            rng.gen_range(0..conv - n)
        };
        let mut data = Vec::new();
        for i in 0..n {
            data.extend(sector(step, v + i));
            model.insert(v + i, step);
        }
        dev.write(v, &data).unwrap();
        if step % 500 == 499 {
            check_all(&dev, &model, conv);
            dev.flush().unwrap();
            drop(dev);
            dev = ConvZones::open(inner.clone(), 1).unwrap();
            check_all(&dev, &model, conv);
        }
        let empty = (0..7)
            .filter(|&z| inner.zone(z).unwrap().condition == ZoneCondition::Empty)
            .count();
        if step > 100 && empty >= 1 {
            resets_seen += 1;
        }
    }
    check_all(&dev, &model, conv);
    // Far more sectors were written than the log holds: it was cleaned again and again.
    let s = inner.stats();
    assert!(s.bytes_written > 7 * 768 * 1024 * 3, "{}", s.bytes_written);
    assert!(resets_seen > 0);
    // Never more than one log zone active.
    let active = (0..7)
        .filter(|&z| inner.zone(z).unwrap().is_active())
        .count();
    assert!(active <= 1, "{active} log zones active");
}

#[test]
fn power_cuts_lose_nothing_that_was_flushed() {
    for seed in 0..40u64 {
        let inner = zns(true, seed);
        let dev = ConvZones::open(inner.clone(), 1).unwrap();
        let mut rng = SmallRng::seed_from_u64(seed);
        // Per sector: the flushed tag, and tags written since.
        let mut durable: HashMap<u64, u32> = HashMap::new();
        let mut since: HashMap<u64, Vec<u32>> = HashMap::new();
        inner.arm_power_cut(rng.gen_range(5..400), seed);
        let mut step = 0u32;
        loop {
            step += 1;
            let n = rng.gen_range(1..=8u64);
            let v = rng.gen_range(0..64u64);
            let mut data = Vec::new();
            for i in 0..n {
                data.extend(sector(step, v + i));
            }
            match dev.write(v, &data) {
                Ok(_) => {
                    for i in 0..n {
                        since.entry(v + i).or_default().push(step);
                    }
                }
                Err(DeviceError::PowerLoss) => break,
                Err(e) => panic!("seed {seed}: {e}"),
            }
            if rng.gen_bool(0.2) {
                match dev.flush() {
                    Ok(_) => {
                        for (k, tags) in since.drain() {
                            if let Some(&t) = tags.last() {
                                durable.insert(k, t);
                            }
                        }
                    }
                    Err(DeviceError::PowerLoss) => break,
                    Err(e) => panic!("seed {seed}: {e}"),
                }
            }
        }
        drop(dev);
        inner.power_on();
        let dev = ConvZones::open(inner.clone(), 1).unwrap();
        let mut b = vec![0u8; SS];
        for v in 0..72u64 {
            dev.read(v, &mut b).unwrap();
            let tag = u32::from_le_bytes(b[..4].try_into().unwrap());
            let ok = match durable.get(&v) {
                Some(&d) => {
                    (b == sector(d, v))
                        || since
                            .get(&v)
                            .is_some_and(|t| t.contains(&tag) && b == sector(tag, v))
                }
                None => {
                    b.iter().all(|&x| x == 0)
                        || since
                            .get(&v)
                            .is_some_and(|t| t.contains(&tag) && b == sector(tag, v))
                }
            };
            assert!(
                ok,
                "seed {seed}: sector {v} reads tag {tag}, durable {:?}",
                durable.get(&v)
            );
        }
        // It keeps working after the cut (a torn zone is cleaned first).
        dev.write(3, &sector(9999, 3)).unwrap();
        dev.read(3, &mut b).unwrap();
        assert_eq!(b, sector(9999, 3));
    }
}

#[test]
fn a_damaged_header_refuses_the_open_and_damaged_data_is_found_by_the_scrub() {
    let inner = zns(false, 3);
    let dev = ConvZones::open(inner.clone(), 1).unwrap();
    for v in 0..4u64 {
        dev.write(v, &sector(1, v)).unwrap();
    }
    assert!(dev.verify_records().unwrap().is_empty());
    assert_eq!(dev.device_lba(2), Some(5));
    assert_eq!(dev.device_lba(9), None);
    drop(dev);
    // Records: header at 0, data at 1; header at 2, data at 3; ...
    let mut raw = vec![0u8; SS];
    for (lba, header) in [(2u64, true), (7u64, false)] {
        let copy = Arc::new(Disk::in_memory(inner.config().clone()).unwrap());
        for l in 0..8u64 {
            inner.read(l, &mut raw).unwrap();
            if l == lba {
                raw[30] ^= 1;
            }
            copy.write(l, &raw).unwrap();
        }
        match ConvZones::open(copy, 1) {
            Err(e) => {
                assert!(header, "damaged data refused the open: {e}");
                assert!(matches!(e, DeviceError::Corrupt { .. }), "{e}");
                assert!(e.to_string().contains("LBA 2"), "{e}");
            }
            Ok(d) => {
                assert!(!header, "a damaged header was accepted");
                // The damaged copy is served (the layer above checks its own data), never an
                // older one; the scrub names the record.
                let mut b = vec![0u8; SS];
                d.read(3, &mut b).unwrap();
                assert_ne!(b, sector(1, 3));
                assert_eq!(b[..30], sector(1, 3)[..30]);
                let bad = d.verify_records().unwrap();
                assert_eq!(bad.len(), 1, "{bad:?}");
                assert_eq!(bad[0].0, 6);
            }
        }
    }
}

#[test]
fn a_torn_tail_is_ignored_and_its_zone_cleaned_at_the_next_write() {
    let inner = zns(false, 4);
    let dev = ConvZones::open(inner.clone(), 1).unwrap();
    dev.write(0, &sector(1, 0)).unwrap();
    drop(dev);
    // A record claiming 3 data sectors of which 1 reached the device.
    let h = Header::decode(&{
        let mut b = vec![0u8; SS];
        inner.read(0, &mut b).unwrap();
        b
    })
    .unwrap();
    let torn = Header {
        kind: tegula_device::convzones::record::KIND_WRITE,
        seq: h.seq + 1,
        vlba: 0,
        count: 3,
        ..h
    };
    let mut w = torn.encode();
    w.extend(sector(2, 0));
    inner.write(2, &w).unwrap();
    let dev = ConvZones::open(inner.clone(), 1).unwrap();
    let mut b = vec![0u8; SS];
    dev.read(0, &mut b).unwrap();
    assert_eq!(b, sector(1, 0), "the torn record's data is not served");
    dev.write(1, &sector(3, 1)).unwrap();
    assert_eq!(
        inner.zone(0).unwrap().condition,
        ZoneCondition::Empty,
        "the torn zone was cleaned"
    );
    dev.read(0, &mut b).unwrap();
    assert_eq!(b, sector(1, 0));
    drop(dev);
    let dev = ConvZones::open(inner, 1).unwrap();
    dev.read(1, &mut b).unwrap();
    assert_eq!(b, sector(3, 1));
}

#[test]
fn the_zone_rules_hold_through_the_adapter() {
    let dev = ConvZones::open(zns(true, 5), 1).unwrap();
    let checks = conformance::run(&dev, |_| {});
    let failed: Vec<_> = checks.iter().filter(|c| c.failed()).collect();
    assert!(failed.is_empty(), "{failed:#?}");
    for name in ["conventional-zones", "active-limit", "zone-capacity"] {
        assert!(
            checks
                .iter()
                .any(|c| c.name == name && matches!(c.outcome, Outcome::Passed(_))),
            "{name}"
        );
    }
}
