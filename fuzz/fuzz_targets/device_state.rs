//! Disk image state slots: decoding arbitrary bytes never panics, and whatever decodes
//! round-trips through the encoder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_device::image::{decode_state, encode_state};

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = decode_state(data) {
        let again = decode_state(&encode_state(&s)).expect("a decoded state re-encodes");
        assert_eq!(again, s);
    }
});
