//! KVIMR superblocks: decoding arbitrary bytes never panics, and whatever decodes
//! round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_kvimr::superblock::Superblock;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some(sb)) = Superblock::decode(data) {
        assert_eq!(Superblock::decode(&sb.encode()), Ok(Some(sb)));
    }
});
