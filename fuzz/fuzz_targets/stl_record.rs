//! dm-smr metadata record payloads (damage events and each layer's records, frame versions 1
//! and 2), decoded as recovery decodes them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tegula_stl::fuzzing::record_payload(data));
