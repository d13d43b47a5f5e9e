//! KVIMR staging records (read-modify-write backups): decoding arbitrary bytes never panics,
//! and whatever decodes round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_kvimr::staging::StagingRecord;

fuzz_target!(|data: &[u8]| {
    let _ = StagingRecord::frame_len(data);
    for ss in [512, 4096] {
        if let Ok(r) = StagingRecord::decode(data, ss) {
            assert_eq!(StagingRecord::decode(&r.encode(), ss).ok(), Some(r));
        }
    }
});
