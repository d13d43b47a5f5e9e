//! ZEA extent metadata blocks: decoding arbitrary bytes at an arbitrary LBA never panics, and
//! whatever decodes re-encodes to a block that decodes to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_zea::ExtentMeta;

fuzz_target!(|data: &[u8]| {
    if data.len() < 9 {
        return;
    }
    let mut lba = [0u8; 8];
    lba.copy_from_slice(&data[..8]);
    let at = u64::from_le_bytes(lba);
    let sector = if data[8] & 1 == 0 { 4096 } else { 512 };
    let b = &data[9..];
    if let Ok(m) = ExtentMeta::decode(b, at, sector) {
        let again = m.encode(b.len()).expect("a decoded block fits its own size");
        assert_eq!(ExtentMeta::decode(&again, at, sector).expect("re-decodes"), m);
    }
});
