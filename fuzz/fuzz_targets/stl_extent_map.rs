//! The extent map and the damage state of dm-smr checkpoints on their own.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tegula_stl::fuzzing::extent_map(data));
