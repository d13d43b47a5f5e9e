//! Property tests of the extent metadata block: random and mutated bytes never panic the
//! decoder, any valid block round-trips, and any change to the covered bytes is detected.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use tegula_zea::meta::{chunk_bytes_for, chunk_crcs, ExtentMeta};

fn block(len: u64, back: Vec<u64>, seq: u64, zba: u64) -> (ExtentMeta, Vec<u8>) {
    let data: Vec<u8> = (0..len).map(|i| (i * 13) as u8).collect();
    let cb = chunk_bytes_for(len, 4096, back.len()).unwrap();
    let data_lba = 10_000;
    let m = ExtentMeta {
        seq,
        zba,
        tag: seq ^ zba,
        data_lba,
        data_len: len,
        meta_lba: data_lba + len.div_ceil(4096),
        data_crc: tegula_codec::checksum::crc32c(&data),
        chunk_bytes: cb as u32,
        chunk_crcs: chunk_crcs(&data, cb),
        back,
    };
    let b = m.encode(4096).unwrap();
    (m, b)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..5000), at in any::<u64>()) {
        let _ = ExtentMeta::decode(&b, at, 4096);
        let _ = ExtentMeta::decode(&b, at, 512);
    }

    #[test]
    fn valid_blocks_round_trip(
        len in 1u64..(512 << 10),
        nback in 0usize..64,
        seq in any::<u64>(),
        zba in any::<u64>(),
    ) {
        let back: Vec<u64> = (0..nback as u64).map(|i| 9_000 - i * 3).collect();
        let (m, b) = block(len, back, seq, zba);
        prop_assert_eq!(ExtentMeta::decode(&b, m.meta_lba, 4096).unwrap(), m);
    }

    #[test]
    fn mutated_blocks_are_rejected_or_decode_unchanged(
        len in 1u64..(128 << 10),
        edits in proptest::collection::vec((0usize..4096, any::<u8>()), 1..5),
        cut in proptest::option::of(0usize..4097),
    ) {
        let (m, good) = block(len, vec![900, 800, 700], 5, 6);
        let mut b = good.clone();
        for (i, v) in edits {
            b[i] = v;
        }
        if let Some(c) = cut {
            b.truncate(c);
        }
        let used = ExtentMeta::encoded_len(3, m.chunk_crcs.len());
        let covered_changed = b.len() < used || b[..used] != good[..used];
        match ExtentMeta::decode(&b, m.meta_lba, 4096) {
            Ok(got) => {
                prop_assert!(!covered_changed, "a change to the covered bytes went unnoticed");
                prop_assert_eq!(got, m);
            }
            Err(_) => prop_assert!(covered_changed),
        }
    }
}
