//! dm-smr drive-state slots (clock, damage, media and STL statistics): decoding arbitrary bytes
//! never panics, and a state that decodes round-trips through the encoder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_stl::image::{decode_drive_state, encode_drive_state};

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = decode_drive_state(data) {
        let again =
            decode_drive_state(&encode_drive_state(&s)).expect("a decoded state re-encodes");
        assert_eq!(again, s);
    }
});
