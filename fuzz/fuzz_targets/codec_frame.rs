//! The shared checksummed frame and codec: decoding arbitrary bytes with each real frame format
//! (disk-image state slot, dm-smr drive-state slot, metadata-log record) and with every codec
//! read never panics, and a frame that decodes re-encodes to one that decodes the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_codec::frame::Format;
use tegula_codec::Dec;

const FORMATS: [Format; 3] = [
    tegula_device::image::STATE_FORMAT,
    tegula_stl::image::DM_STATE_FORMAT,
    tegula_stl::metalog::FRAME_FORMAT,
];

fuzz_target!(|data: &[u8]| {
    for fmt in FORMATS {
        let _ = fmt.decode_header(data);
        if let Ok(f) = fmt.decode(data) {
            let again = fmt.encode(f.header.kind, f.header.seq, f.payload);
            let g = fmt.decode(&again).expect("a decoded frame re-encodes");
            assert_eq!((g.header, g.payload), (f.header, f.payload));
        }
    }
    // The first byte picks the reads; the rest is decoded until a read fails.
    let Some((&ops, rest)) = data.split_first() else {
        return;
    };
    let mut d = Dec::new(rest);
    for i in 0..16 {
        let ok = match (ops.rotate_left(i) as usize + i as usize) % 8 {
            0 => d.u8().is_ok(),
            1 => d.u16().is_ok(),
            2 => d.u32().is_ok(),
            3 => d.u64().is_ok(),
            4 => d.i64().is_ok(),
            5 => d.varint().is_ok(),
            6 => d.bytes_u32().is_ok(),
            _ => d.bytes_varint().is_ok(),
        };
        if !ok {
            break;
        }
    }
});
