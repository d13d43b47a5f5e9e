//! The RESP server's record decoders on arbitrary bytes (format in docs/formats/resp-keys.md):
//! a key record and an inline hash's fields never panic; a key record that decodes re-encodes
//! to the same bytes, an inline hash's fields come out strictly in field order and decode
//! again from their encoding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_server::keys::{decode_inline, encode_inline, Record};

fuzz_target!(|data: &[u8]| {
    if let Some(r) = Record::decode(data) {
        assert_eq!(r.encode(), data);
    }
    if let Some(fields) = decode_inline(data) {
        assert!(fields.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(decode_inline(&encode_inline(&fields)), Some(fields));
    }
});
