//! Drive configurations: parsing arbitrary text never panics, and an accepted configuration
//! survives its own TOML round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_device::DiskConfig;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(c) = DiskConfig::from_toml(text) {
        let again = DiskConfig::from_toml(&c.to_toml()).expect("an accepted config re-parses");
        assert_eq!(again, c);
    }
});
