//! Power cuts through the fault injector: with the write cache on, acknowledged but unflushed
//! data may be lost but flushed data never is, and write pointers roll back to what reached the
//! media; with the cache off every acknowledged write survives; a cut write persists a prefix
//! of whole sectors; the same seed gives the same outcome.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use tegula_device::{
    BlockDevice, DeviceError, Disk, DriveKind, Request, WriteFlags, ZoneCondition, ZoneFilter,
    ZonedDevice,
};

const ZS: u64 = 256;
const ZONES: u32 = 8;

/// What the host knows: acknowledged and durable contents of the sequential zones, and for
/// conventional sectors every value they may hold after a cut.
#[derive(Default)]
struct Reference {
    acked: BTreeMap<u64, u32>,
    durable: BTreeMap<u64, u32>,
    /// Conventional sectors: (durable tag, tags written since the last flush).
    conv: HashMap<u64, (Option<u32>, Vec<u32>)>,
    /// Tag of a conventional write that the cut interrupted (not acknowledged).
    cut_tag: Option<u32>,
}

impl Reference {
    fn flushed(&mut self) {
        self.durable = self.acked.clone();
        for v in self.conv.values_mut() {
            if let Some(&last) = v.1.last() {
                v.0 = Some(last);
            }
            v.1.clear();
        }
    }
}

/// Outcome of one run, for determinism checks.
#[derive(Debug, PartialEq)]
struct Outcome {
    lost: Vec<(u64, u64)>,
    zones: Vec<tegula_device::Zone>,
    now: u64,
    ops_before_cut: usize,
}

fn disk(cache: bool, seed: u64) -> Disk {
    let mut c = tiny_hm_config(ZONES as u64, 64);
    c.cache.write_cache = cache;
    c.cache.size = 32 * SS as u64;
    c.seed = seed;
    Disk::in_memory(c).unwrap()
}

/// Runs a random workload with a power cut armed at a random media write, then powers on and
/// checks the drive against the reference.
fn cut_run(seed: u64, cache: bool) -> Outcome {
    let d = disk(cache, seed);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut r = Reference::default();
    d.arm_power_cut(rng.gen_range(1..=40), seed);
    let mut tag = 0u32;
    let mut ops_before_cut = 0;
    'work: for op in 0..300 {
        ops_before_cut = op;
        tag += 1;
        let roll = rng.gen_range(0..100);
        let res: Result<(), DeviceError> = if roll < 8 {
            d.flush().map(|_| r.flushed())
        } else if roll < 12 {
            let z = rng.gen_range(1..ZONES);
            d.reset_zone(z).map(|_| {
                let s = z as u64 * ZS;
                for l in s..s + ZS {
                    r.acked.remove(&l);
                    r.durable.remove(&l);
                }
            })
        } else if roll < 22 {
            // Conventional zone: overwrite anywhere.
            let lba = rng.gen_range(0..ZS - 8);
            let n = rng.gen_range(1..8);
            for l in lba..lba + n {
                r.conv.entry(l).or_default().1.push(tag);
            }
            let res = d.write(lba, &pattern(lba, n, tag)).map(|_| ());
            if res.is_err() {
                r.cut_tag = Some(tag);
            }
            res
        } else if roll < 30 {
            // A queued batch of appends to two zones.
            let mut reqs = Vec::new();
            let mut planned = Vec::new();
            let z1 = rng.gen_range(1..ZONES);
            let z2 = 1 + (z1 + rng.gen_range(0..ZONES - 2)) % (ZONES - 1);
            for z in [z1, z2] {
                let zone = d.zone(z).unwrap();
                let mut wp = zone.write_pointer_lba;
                for _ in 0..3 {
                    let n = rng.gen_range(1..5);
                    if wp + n > zone.end_lba() {
                        break;
                    }
                    reqs.push(Request::Write {
                        lba: wp,
                        data: pattern(wp, n, tag),
                        fua: false,
                    });
                    planned.push((wp, n));
                    wp += n;
                }
            }
            let mut res = Ok(());
            for (c, &(lba, n)) in d.submit(reqs).into_iter().zip(&planned) {
                match c {
                    Ok(_) => {
                        for l in lba..lba + n {
                            r.acked.insert(l, tag);
                        }
                    }
                    Err(e) => res = Err(e),
                }
            }
            res
        } else {
            let z = rng.gen_range(1..ZONES);
            let zone = d.zone(z).unwrap();
            let n = rng.gen_range(1..12);
            if zone.write_pointer_lba + n > zone.end_lba() {
                continue;
            }
            let lba = zone.write_pointer_lba;
            let fua = rng.gen_bool(0.15);
            d.write_with(lba, &pattern(lba, n, tag), WriteFlags { fua })
                .map(|_| {
                    let prefix_durable =
                        lba == zone.start_lba || r.durable.contains_key(&(lba - 1));
                    for l in lba..lba + n {
                        r.acked.insert(l, tag);
                        if fua && prefix_durable {
                            r.durable.insert(l, tag);
                        }
                    }
                })
        };
        match res {
            Ok(()) => {}
            Err(DeviceError::PowerLoss) => break 'work,
            Err(e) => panic!("seed {seed} op {op}: {e}"),
        }
    }
    if d.with_media(|m| m.is_powered()) {
        d.power_cut();
    }
    // Without power every command fails.
    let mut one = vec![0u8; SS];
    expect_err(d.read(0, &mut one), "PowerLoss");
    expect_err(d.write(0, &one), "PowerLoss");
    expect_err(d.flush(), "PowerLoss");
    let report = d.power_on();
    let lost: Vec<(u64, u64)> = report.lost.iter().collect();
    check(&d, &r, seed, cache);
    Outcome {
        lost,
        zones: d.report_zones(ZoneFilter::All),
        now: d.now(),
        ops_before_cut,
    }
}

fn check(d: &Disk, r: &Reference, seed: u64, cache: bool) {
    for z in d.report_zones(ZoneFilter::All).into_iter().skip(1) {
        assert!(
            !z.condition.is_open(),
            "seed {seed}: zone {} still open after power on",
            z.index
        );
        let wp = z.write_pointer_lba;
        let acked_end = (z.start_lba..z.end_lba())
            .take_while(|l| r.acked.contains_key(l))
            .last()
            .map_or(z.start_lba, |l| l + 1);
        let durable_end = (z.start_lba..z.end_lba())
            .take_while(|l| r.durable.contains_key(l))
            .last()
            .map_or(z.start_lba, |l| l + 1);
        assert!(
            wp >= durable_end,
            "seed {seed}: zone {} lost flushed data: wp {wp} < durable end {durable_end}",
            z.index
        );
        assert!(
            wp <= acked_end,
            "seed {seed}: zone {} wp {wp} is past the acknowledged end {acked_end}",
            z.index
        );
        if !cache {
            assert_eq!(
                wp, acked_end,
                "seed {seed}: zone {} lost an acknowledged write",
                z.index
            );
        }
        if wp > z.start_lba {
            let mut buf = vec![0u8; (wp - z.start_lba) as usize * SS];
            d.read(z.start_lba, &mut buf).unwrap();
            for (i, s) in buf.chunks(SS).enumerate() {
                let l = z.start_lba + i as u64;
                assert_eq!(
                    tag_of(l, s),
                    r.acked.get(&l).copied(),
                    "seed {seed}: sector {l}"
                );
            }
        }
        if wp < z.end_lba() {
            expect_err(d.read(wp, &mut [0u8; SS]), "ReadPastWritePointer");
        }
    }
    let mut buf = vec![0u8; ZS as usize * SS];
    d.read(0, &mut buf).unwrap();
    for (l, (dur, since)) in &r.conv {
        let got = tag_of(*l, &buf[*l as usize * SS..(*l as usize + 1) * SS]);
        let ok = got == *dur || got.is_some_and(|t| since.contains(&t));
        assert!(
            ok,
            "seed {seed}: conventional sector {l} holds {got:?}, durable {dur:?}, since {since:?}"
        );
        if !cache {
            let acked_last = since
                .iter()
                .rev()
                .find(|&&t| Some(t) != r.cut_tag)
                .copied()
                .or(*dur);
            assert!(
                got == acked_last || (got.is_some() && got == r.cut_tag),
                "seed {seed}: sector {l} holds {got:?}, last acknowledged {acked_last:?}"
            );
        }
    }
}

#[test]
fn with_the_write_cache_flushed_data_survives_hundreds_of_random_cuts() {
    let mut lost_something = 0;
    for seed in 0..300 {
        let o = cut_run(seed, true);
        if !o.lost.is_empty() {
            lost_something += 1;
        }
    }
    assert!(
        lost_something > 100,
        "only {lost_something} runs lost cached data"
    );
}

#[test]
fn with_the_write_cache_off_every_acknowledged_write_survives_random_cuts() {
    for seed in 1000..1200 {
        cut_run(seed, false);
    }
}

#[test]
fn the_same_seed_gives_the_same_outcome() {
    for seed in [7u64, 8, 9] {
        let a = cut_run(seed, true);
        let b = cut_run(seed, true);
        assert_eq!(a, b, "seed {seed}");
    }
    assert_ne!(cut_run(7, true), cut_run(8, true));
}

#[test]
fn a_cut_write_persists_a_prefix_of_whole_sectors() {
    let mut prefixes = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let mut c = tiny_hm_config(8, 64);
        c.kind = DriveKind::Cmr;
        c.cache.write_cache = false;
        let d = Disk::in_memory(c).unwrap();
        let (lba, n) = (100u64, 64u64);
        d.write(lba, &pattern(lba, n, 1)).unwrap();
        d.arm_power_cut(1, seed);
        expect_err(d.write(lba, &pattern(lba, n, 2)), "PowerLoss");
        let lost: Vec<_> = d.power_on().lost.iter().collect();
        let mut buf = vec![0u8; n as usize * SS];
        d.read(lba, &mut buf).unwrap();
        let tags: Vec<u32> = buf
            .chunks(SS)
            .enumerate()
            .map(|(i, s)| tag_of(lba + i as u64, s).unwrap())
            .collect();
        let p = tags.iter().take_while(|&&t| t == 2).count() as u64;
        assert!(
            tags[p as usize..].iter().all(|&t| t == 1),
            "not a prefix: {tags:?}"
        );
        if p < n {
            assert_eq!(lost, vec![(lba + p, lba + n)]);
        } else {
            assert!(lost.is_empty());
        }
        prefixes.insert(p);
    }
    assert!(
        prefixes.iter().filter(|&&p| p > 0 && p < 64).count() >= 5,
        "prefixes {prefixes:?}"
    );
}

#[test]
fn a_cut_in_a_queued_batch_rolls_back_every_zone_the_batch_touched() {
    for after in 1..=6u64 {
        let d = disk(false, 1);
        let mut reqs = Vec::new();
        for z in [1u64, 2, 3] {
            for k in 0..2 {
                let lba = z * ZS + k * 4;
                reqs.push(Request::Write {
                    lba,
                    data: pattern(lba, 4, 1),
                    fua: false,
                });
            }
        }
        d.arm_power_cut(after, 3);
        let res = d.submit(reqs);
        let acked: Vec<bool> = res.iter().map(|r| r.is_ok()).collect();
        assert_eq!(acked.iter().filter(|&&a| a).count() as u64, after - 1);
        d.power_on();
        for (i, z) in [1u32, 2, 3].into_iter().enumerate() {
            let zone = d.zone(z).unwrap();
            let acked_in_zone = acked[2 * i..2 * i + 2].iter().take_while(|&&a| a).count() as u64;
            let wp = zone.write_pointer_lba - zone.start_lba;
            assert!(
                wp >= acked_in_zone * 4 && wp <= (acked_in_zone * 4 + 4).min(8),
                "cut at {after}: zone {z} wp {wp} but {acked_in_zone} writes acknowledged"
            );
            if wp > 0 {
                let mut buf = vec![0u8; wp as usize * SS];
                d.read(zone.start_lba, &mut buf).unwrap();
                for (k, s) in buf.chunks(SS).enumerate() {
                    assert_eq!(
                        tag_of(zone.start_lba + k as u64, s),
                        Some(1),
                        "zone {z} sector {k}"
                    );
                }
            }
        }
    }
}

#[test]
fn open_zones_come_back_closed_after_a_power_cycle() {
    let d = disk(true, 0);
    d.write(ZS, &[1u8; SS]).unwrap();
    d.open_zone(2).unwrap();
    d.write(3 * ZS, &[1u8; 2 * SS]).unwrap();
    d.flush().unwrap();
    d.power_cut();
    d.power_on();
    assert_eq!(d.zone(1).unwrap().condition, ZoneCondition::Closed);
    assert_eq!(d.zone(2).unwrap().condition, ZoneCondition::Empty);
    assert_eq!(d.zone(3).unwrap().condition, ZoneCondition::Closed);
    assert!(d.report_zones(ZoneFilter::Open).is_empty());
}

#[test]
fn unflushed_cached_writes_are_reported_lost_and_their_zone_rolls_back() {
    let d = disk(true, 0);
    d.write(ZS, &pattern(ZS, 4, 1)).unwrap();
    d.flush().unwrap();
    d.write(ZS + 4, &pattern(ZS + 4, 4, 2)).unwrap();
    assert_eq!(d.zone(1).unwrap().write_pointer_lba, ZS + 8);
    d.power_cut();
    let lost: Vec<_> = d.power_on().lost.iter().collect();
    assert_eq!(lost, vec![(ZS + 4, ZS + 8)]);
    assert_eq!(d.zone(1).unwrap().write_pointer_lba, ZS + 4);
    let mut buf = vec![0u8; 4 * SS];
    d.read(ZS, &mut buf).unwrap();
    assert_eq!(buf, pattern(ZS, 4, 1));
}

/// Runs writes of 4 KiB to 2 MiB (whole aligned 1 MiB blocks among them) on a CMR drive with
/// its write cache on or off, with flushes and a power cut armed at a random media write,
/// through `write_owned` or `write_with`; returns what the drive reports and holds afterwards.
fn owned_run(seed: u64, cache: bool, owned: bool) -> (Vec<(u64, u64)>, Vec<u8>) {
    let mut c = tiny_hm_config(16, 64);
    c.kind = DriveKind::Cmr;
    c.cache.write_cache = cache;
    c.cache.size = 4 << 20;
    c.seed = seed;
    let d = Disk::in_memory(c).unwrap();
    let mut rng = SmallRng::seed_from_u64(seed);
    d.arm_power_cut(rng.gen_range(1..=30), seed);
    let blocks = 16u64 * 256;
    for tag in 1..200u32 {
        let res = if rng.gen_range(0..10) == 0 {
            d.flush().map(|_| ())
        } else {
            let (lba, n) = if rng.gen_bool(0.5) {
                (rng.gen_range(0..14u64) * 256, 256 * rng.gen_range(1..=2u64))
            } else {
                let n = rng.gen_range(1..40u64);
                (rng.gen_range(0..blocks - n), n)
            };
            let data = pattern(lba, n, tag);
            let flags = WriteFlags {
                fua: rng.gen_bool(0.1),
            };
            if owned {
                d.write_owned(lba, data, flags)
                    .map(|(_, back)| assert!(back.len() <= 2 << 20))
            } else {
                d.write_with(lba, &data, flags).map(|_| ())
            }
        };
        match res {
            Ok(()) => {}
            Err(DeviceError::PowerLoss) => break,
            Err(e) => panic!("seed {seed}: {e}"),
        }
    }
    if d.with_media(|m| m.is_powered()) {
        d.power_cut();
    }
    let lost = d.power_on().lost.iter().collect();
    let mut all = vec![0u8; blocks as usize * SS];
    d.read(0, &mut all).unwrap();
    (lost, all)
}

#[test]
fn owned_writes_behave_exactly_as_copied_ones_across_power_cuts() {
    let mut cut_inside = 0;
    for seed in 0..30 {
        for cache in [true, false] {
            let copied = owned_run(seed, cache, false);
            let owned = owned_run(seed, cache, true);
            assert_eq!(copied.0, owned.0, "seed {seed} cache {cache}: lost ranges");
            assert!(
                copied.1 == owned.1,
                "seed {seed} cache {cache}: contents differ"
            );
            cut_inside += usize::from(!copied.0.is_empty());
        }
    }
    assert!(cut_inside >= 10, "only {cut_inside} runs lost anything");
}
