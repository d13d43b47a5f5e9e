//! The dm-smr metadata log loader over two arbitrary slots: checkpoint choice, record chain,
//! the search for valid records after a damaged frame (corruption or torn tail); never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tegula_stl::fuzzing::metadata_log(data));
