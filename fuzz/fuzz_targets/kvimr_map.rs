//! KVIMR map copies: decoding arbitrary bytes never panics, and whatever decodes round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_kvimr::map::Map;

fuzz_target!(|data: &[u8]| {
    let _ = Map::frame_len(data);
    if let Ok(m) = Map::decode(data) {
        assert_eq!(Map::decode(&m.encode()).ok(), Some(m));
    }
});
