//! Conventional-zone log record headers (`tegula_device::convzones::record`): decoding
//! arbitrary bytes never panics, and whatever decodes re-encodes to a sector that decodes to
//! the same header.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_device::convzones::record::Header;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = Header::decode(data) {
        // Re-encoding pads to the header's own sector size: only for sizes a device has.
        if (512..=65536).contains(&h.layout.sector_size) {
            let again = h.encode();
            assert_eq!(Header::decode(&again).expect("re-decodes"), h);
        }
    }
});
