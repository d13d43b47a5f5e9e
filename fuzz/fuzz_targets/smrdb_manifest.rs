//! Manifest copies: decoding arbitrary bytes never panics, and whatever decodes round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_smrdb::manifest::Manifest;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Manifest::decode(data) {
        assert_eq!(Manifest::decode(&m.encode()).ok(), Some(m));
    }
});
