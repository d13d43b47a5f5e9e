//! Drive-managed IMR superblocks and metadata records: decoding arbitrary bytes never
//! panics, and whatever decodes round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_dmimr::meta::MetaRecord;
use tegula_dmimr::superblock::Superblock;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some(sb)) = Superblock::decode(data) {
        assert_eq!(Superblock::decode(&sb.encode()), Ok(Some(sb)));
    }
    if let Ok(m) = MetaRecord::decode(data) {
        assert_eq!(MetaRecord::decode(&m.encode()), Ok(m));
    }
});
