//! The shared checksummed frames and codec: decoding arbitrary bytes with each real frame format
//! (disk-image state slot, dm-smr drive-state slot, metadata-log record, SMRDB manifest copy),
//! each real checksum suffix (SMRDB superblock and band blocks, ZEA metadata block), SMRDB's
//! sealed log-chunk header and a file-system-shaped sealed header, and with every codec read
//! never panics; a frame that decodes re-encodes to one that decodes the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_codec::frame::{Format, SealedHeader, Suffix};
use tegula_codec::{Dec, Enc};

const FORMATS: [Format; 4] = [
    tegula_device::image::STATE_FORMAT,
    tegula_stl::image::DM_STATE_FORMAT,
    tegula_stl::metalog::FRAME_FORMAT,
    tegula_smrdb::manifest::MANIFEST_FORMAT,
];

const SUFFIXES: [Suffix; 3] = [
    tegula_smrdb::superblock::SUPER_FRAME,
    tegula_smrdb::band::block::BLOCK,
    tegula_zea::meta::BLOCK_FRAME,
];

/// SMRDB's log chunk header, and one shaped like the file system's record header (magic,
/// four u64 fields, plain crcs).
const SEALED: [SealedHeader; 2] = [
    tegula_smrdb::log::chunk::CHUNK_FRAME,
    SealedHeader::new("fs log record", b"TGLFSLOG", 32),
];

fuzz_target!(|data: &[u8]| {
    for fmt in FORMATS {
        let _ = fmt.decode_header(data);
        let _ = fmt.peek_header(data);
        if let Ok(f) = fmt.decode(data) {
            let again = fmt.encode(f.header.kind, f.header.seq, f.payload);
            let g = fmt.decode(&again).expect("a decoded frame re-encodes");
            // A version read but not written (an older one) re-encodes as the current one.
            assert_eq!(
                (g.header.kind, g.header.seq, g.payload),
                (f.header.kind, f.header.seq, f.payload)
            );
        }
    }
    for s in SUFFIXES {
        if let Ok(body) = s.open(data) {
            let mut e = Enc::new();
            e.raw(body);
            s.seal(&mut e);
            assert_eq!(
                e.as_bytes(),
                data,
                "a suffix that opens re-seals to the same bytes"
            );
        }
        let at = data.first().map_or(0, |&b| b as usize);
        let _ = s.open_at(data, at);
    }
    for h in SEALED {
        if let Ok(sealed) = h.open(data) {
            let payload = &data[h.header_len()..];
            if h.check_payload(&sealed, payload).is_ok() {
                assert_eq!(h.encode(sealed.fields, payload), data[..h.header_len()]);
            }
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
