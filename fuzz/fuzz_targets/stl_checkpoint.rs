//! dm-smr metadata checkpoint payloads (damage state and the journal, set-associative and
//! fully associative layer states, frame versions 1 and 2), decoded as recovery decodes them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tegula_stl::fuzzing::checkpoint_payload(data));
