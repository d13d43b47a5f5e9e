//! Disk image headers: decoding arbitrary bytes never panics, and whatever decodes re-encodes
//! to a header that decodes to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_device::image::{decode_header, encode_header};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = decode_header(data) {
        let again = decode_header(&encode_header(&h)).expect("a decoded header re-encodes");
        assert_eq!(again, h);
    }
});
