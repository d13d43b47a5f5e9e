//! dm-smr image headers: decoding arbitrary bytes never panics, and a header that decodes
//! re-encodes to one that decodes the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_stl::image::{decode_header, encode_header};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = decode_header(data) {
        let again = decode_header(&encode_header(&h)).expect("a decoded header re-encodes");
        assert_eq!(again, h);
    }
});
