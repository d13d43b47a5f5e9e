//! Bad bytes give errors, never panics: random and mutated inputs to every decoder, and a
//! band damaged on the media.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use std::sync::Arc;
use tegula_device::{BlockDevice, ZonedDevice};
use tegula_smrdb::band::block::{
    decode_block, decode_index, encode_index, BlockBuilder, IndexEntry,
};
use tegula_smrdb::band::bloom::Bloom;
use tegula_smrdb::band::footer::Footer;
use tegula_smrdb::band::histogram::Histogram;
use tegula_smrdb::manifest::Manifest;
use tegula_smrdb::memtable::Entry;
use tegula_smrdb::superblock::Superblock;
use tegula_smrdb::{Db, Mode};

fn all_decoders(b: &[u8]) {
    let _ = decode_block(b, true);
    let _ = decode_block(b, false);
    let _ = decode_index(b);
    let _ = Bloom::decode(b);
    let _ = Histogram::decode(b);
    let _ = Footer::decode(b);
    let _ = Manifest::decode(b);
    let _ = Superblock::decode(b);
    let _ = tegula_smrdb::log::decode_payload(b);
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(99);
    for _ in 0..20_000 {
        let n = rng.below(200) as usize;
        let b: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        all_decoders(&b);
    }
}

#[test]
fn mutated_valid_structures_never_panic_and_are_detected() {
    let mut bb = BlockBuilder::default();
    for i in 0..20u64 {
        bb.add(&Entry {
            key: key(i),
            seq: i + 1,
            value: (i % 3 != 0).then(|| vec![i as u8; 10]),
        });
    }
    let block = bb.finish();
    let index = encode_index(&[IndexEntry {
        first_key: key(0),
        last_key: key(19),
        last_seq: 20,
        offset: 0,
        len: block.len() as u32,
    }]);
    let m = Manifest {
        generation: 3,
        next_band_id: 4,
        log_zones: vec![7],
        ..Manifest::default()
    }
    .encode();
    let mut rng = Rng(7);
    for base in [&block, &index, &m] {
        for _ in 0..3000 {
            let mut b = base.clone();
            for _ in 0..1 + rng.below(3) {
                let i = rng.below(b.len() as u64) as usize;
                b[i] ^= 1 << rng.below(8);
            }
            if rng.below(4) == 0 {
                b.truncate(rng.below(b.len() as u64) as usize);
            }
            all_decoders(&b);
            if b != *base {
                // Every decoder that owns this structure rejects the mutation.
                assert!(decode_block(&b, true).is_err() || *base != block);
                assert!(decode_index(&b).is_err() || *base != index);
                assert!(Manifest::decode(&b).is_err() || *base != m);
            }
        }
    }
}

#[test]
fn damaged_band_gives_corruption_not_panic() {
    let disk = tiny_disk(32);
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    let db = Db::create(dev.clone(), format(Mode::Soc), tiny_opts()).unwrap();
    for i in 0..2000u64 {
        db.put(&key(i), &[b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    // Overwrite the first sector of the first band's zone behind the zone rules (on ZNS, the
    // device SMRDB sees starts after its emulated conventional zone: shift to the raw LBA).
    let seen = seen(disk.clone());
    let conv = seen.info().conventional_zones as u64;
    let shift = u64::from(dev.info().zones - seen.info().zones) * dev.info().zone_sectors;
    let band_zone = seen
        .report_zones(tegula_device::ZoneFilter::All)
        .into_iter()
        .find(|z| z.index as u64 >= conv && z.write_pointer_lba > z.start_lba + 2)
        .unwrap();
    drop(seen);
    let raw = band_zone.start_lba + shift;
    let mut sector = vec![0u8; 4096];
    dev.read(raw, &mut sector).unwrap();
    sector[100] ^= 0xff;
    disk.with_media(|m| m.write(raw, &sector, true)).unwrap();
    let db = Db::open(dev, tiny_opts()).unwrap();
    let mut errors = 0;
    for i in 0..2000u64 {
        if db.get(&key(i)).is_err() {
            errors += 1;
        }
    }
    assert!(errors > 0, "the damaged block must be reported");
    let scan_err = db
        .scan(b"", None)
        .map(|it| it.filter(|r| r.is_err()).count());
    assert!(scan_err.is_err() || scan_err.is_ok_and(|n| n > 0));
    let rep = db.check().unwrap();
    assert!(!rep.is_ok());
}

mod prop {
    //! Property tests: arbitrary and mutated bytes given to every decoder give a typed error
    //! or a value, never a panic; mutations of valid structures are detected.
    use super::*;
    use proptest::prelude::*;
    use tegula_smrdb::log::{decode_chunk, encode_batch, frame, CHUNK_HEADER};

    fn valid_structures() -> Vec<Vec<u8>> {
        let mut bb = BlockBuilder::default();
        for i in 0..12u64 {
            bb.add(&Entry {
                key: key(i),
                seq: i + 1,
                value: (i % 4 != 0).then(|| vec![i as u8; 7]),
            });
        }
        let index = vec![IndexEntry {
            first_key: key(0),
            last_key: key(11),
            last_seq: 12,
            offset: 0,
            len: 99,
        }];
        let hashes: Vec<u32> = (0..12)
            .map(|i| tegula_smrdb::band::bloom::hash(&key(i)))
            .collect();
        let m = Manifest {
            generation: 9,
            next_band_id: 5,
            log_zones: vec![3, 4],
            ..Manifest::default()
        };
        let sb = Superblock {
            sector_size: 4096,
            zone_sectors: 256,
            zones: 16,
            conventional_zones: 1,
            slot_sectors: 100,
            mode: Mode::Soc,
        };
        let ops = vec![(key(1), Some(b"v".to_vec())), (key(2), None)];
        assert_eq!(encode_batch(7, &ops).len(), log_payload_len());
        vec![
            bb.finish(),
            encode_index(&index),
            Bloom::build(&hashes, 10).encode(),
            Histogram::from_index(&key(0), &index, 4096).encode(),
            Footer::default().encode(),
            m.encode(),
            sb.encode(),
            frame(&encode_batch(7, &ops), 512),
        ]
    }

    fn log_payload_len() -> usize {
        encode_batch(7, &[(key(1), Some(b"v".to_vec())), (key(2), None)]).len()
    }

    fn decode_all(b: &[u8]) {
        all_decoders(b);
        let _ = decode_chunk(b, 512);
        let _ = decode_chunk(b, 4096);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..600)) {
            decode_all(&b);
        }

        #[test]
        fn mutated_structures_are_rejected(which in 0usize..8, at in any::<usize>(), bit in 0u8..8, cut in any::<bool>()) {
            let base = valid_structures().swap_remove(which);
            let mut b = base.clone();
            let i = at % b.len();
            b[i] ^= 1 << bit;
            if cut {
                b.truncate(i);
            }
            decode_all(&b);
            let rejected = match which {
                0 => decode_block(&b, true).is_err(),
                1 => decode_index(&b).is_err(),
                2 => Bloom::decode(&b).is_err(),
                3 => Histogram::decode(&b).is_err(),
                4 => Footer::decode(&b).is_err(),
                5 => Manifest::decode(&b).is_err(),
                // A superblock whose magic is hit reads as "no superblock".
                6 => !matches!(Superblock::decode(&b), Ok(Some(_))),
                // A log chunk whose magic is hit reads as no chunk (which replay below the write
                // pointer reports as damage); a flip in the sector padding after the chunk is
                // harmless.
                _ => {
                    !matches!(decode_chunk(&b, 512), Ok(Some(_)))
                        || i >= CHUNK_HEADER + log_payload_len()
                }
            };
            prop_assert!(rejected, "structure {which}: flip at {i} (cut {cut}) not detected");
        }
    }
}
