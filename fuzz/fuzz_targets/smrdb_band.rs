//! The per-band structures (data block, index, Bloom filter, histogram, footer): decoding
//! arbitrary bytes never panics, an in-place block search agrees with the full decode, and
//! whatever decodes round-trips through its encoder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_smrdb::band::block::{block_entries, decode_block, decode_index, encode_index, search_block};
use tegula_smrdb::band::bloom::Bloom;
use tegula_smrdb::band::footer::Footer;
use tegula_smrdb::band::histogram::Histogram;

fuzz_target!(|data: &[u8]| {
    if let Ok(entries) = decode_block(data, false) {
        let area = block_entries(data, false).expect("a decoded block has an entry area");
        for e in entries.iter().take(8) {
            let found = search_block(area, &e.key, e.seq).expect("a decoded block searches");
            assert!(found.is_some());
        }
    }
    let _ = decode_block(data, true);
    if let Ok(idx) = decode_index(data) {
        assert_eq!(decode_index(&encode_index(&idx)).ok(), Some(idx));
    }
    if let Ok(b) = Bloom::decode(data) {
        assert_eq!(Bloom::decode(&b.encode()).ok(), Some(b));
    }
    if let Ok(h) = Histogram::decode(data) {
        assert_eq!(Histogram::decode(&h.encode()).ok(), Some(h));
    }
    if let Ok(f) = Footer::decode(data) {
        assert_eq!(Footer::decode(&f.encode()).ok(), Some(f));
    }
});
