//! Host-banded files: decoding arbitrary bytes as a zone state record or a descriptor never
//! panics, and whatever decodes round-trips through the encoder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_device::hostfile::format::{
    decode_descriptor, decode_state, encode_descriptor, encode_state,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = decode_state(data) {
        let again = decode_state(&encode_state(&s)).expect("a decoded state re-encodes");
        assert_eq!(again, s);
    }
    if let Ok(d) = decode_descriptor(data) {
        let again = decode_descriptor(&encode_descriptor(&d)).expect("a descriptor re-encodes");
        assert_eq!(again, d);
    }
});
