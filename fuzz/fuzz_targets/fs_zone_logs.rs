//! `tegula_fs::formats::zone_logs`: decoding arbitrary bytes as a per-zone append/delete log
//! frame never panics, and whatever decodes round-trips through its encoder (the function
//! asserts that itself).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tegula_fs::formats::zone_logs(data);
});
