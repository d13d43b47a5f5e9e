//! Zone-files devices: decoding arbitrary bytes as a descriptor never panics, and whatever
//! decodes round-trips through the encoder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_device::zonefiles::format::{decode, encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(d) = decode(data) {
        let again = decode(&encode(&d)).expect("a descriptor re-encodes");
        assert_eq!(again, d);
    }
});
