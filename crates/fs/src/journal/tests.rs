//! The journal's frames keep the documented bytes (`docs/formats/fs.md`): the superblock's
//! checksum suffix and the sealed header of checkpoints and log records.

use super::*;
use tegula_codec::frame::Crc;

fn sb(version: u32) -> Superblock {
    Superblock {
        version,
        sector: 512,
        zones: 64,
        zone_sectors: 2048,
        first_seq_zone: 1,
        slot0: 2,
        slot1: 500,
        slot_sectors: 498,
        log_lba: 998,
        log_sectors: 1050,
        back_pointers: 4,
        fs_id: 0x0123_4567_89ab_cdef,
    }
}

#[test]
fn the_superblock_keeps_its_documented_bytes() {
    let s = sb(FORMAT_VERSION);
    let mut want = b"TGLFSSB1".to_vec();
    for v in [FORMAT_VERSION, 512, 64, 1] {
        want.extend_from_slice(&v.to_le_bytes());
    }
    for v in [2048u64, 2, 500, 498, 998, 1050] {
        want.extend_from_slice(&v.to_le_bytes());
    }
    want.extend_from_slice(&4u32.to_le_bytes());
    want.extend_from_slice(&s.fs_id.to_le_bytes());
    assert_eq!(want.len(), 84);
    let crc = Crc::Plain.of(&want);
    want.extend_from_slice(&crc.to_le_bytes());
    want.resize(512, 0);
    let b = s.encode();
    assert_eq!(b, want);
    assert_eq!(Superblock::decode(&b), Ok(s));
    // Every flipped bit of the 88 bytes is refused; the padding is not covered.
    for i in 0..88 {
        for bit in 0..8 {
            let mut c = b.clone();
            c[i] ^= 1 << bit;
            assert!(Superblock::decode(&c).is_err(), "byte {i} bit {bit}");
        }
    }
    let mut c = b.clone();
    c[200] ^= 1;
    assert!(Superblock::decode(&c).is_ok());
}

#[test]
fn superblock_errors_are_typed_and_version_1_is_read() {
    let old = sb(1).encode();
    assert_eq!(Superblock::decode(&old).map(|s| s.version), Ok(1));
    let e = Superblock::decode(&sb(3).encode()).unwrap_err();
    assert_eq!(e.to_string(), "unsupported fs superblock version 3");
    assert_eq!(
        Superblock::decode(&[0u8; 512]),
        Err(FrameError::Magic {
            name: "fs superblock"
        }
        .into())
    );
    let b = sb(2).encode();
    assert!(matches!(
        Superblock::decode(&b[..86]),
        Err(FormatError::Frame(FrameError::Truncated(_)))
    ));
    let mut c = b.clone();
    c[40] ^= 1;
    assert!(matches!(
        Superblock::decode(&c),
        Err(FormatError::Frame(FrameError::Checksum { .. }))
    ));
}

#[test]
fn record_headers_keep_their_documented_bytes() {
    let payload = b"a batch of ops";
    for (frame, magic) in [(&LOG_FRAME, b"TGLFSLOG"), (&CKP_FRAME, b"TGLFSCKP")] {
        let h = header(frame, 7, 9, payload, 42);
        let mut want = magic.to_vec();
        for v in [7u64, 9, payload.len() as u64, 42] {
            want.extend_from_slice(&v.to_le_bytes());
        }
        want.extend_from_slice(&Crc::Plain.of(payload).to_le_bytes());
        let c = Crc::Plain.of(&want);
        want.extend_from_slice(&c.to_le_bytes());
        assert_eq!(h, want);
        assert_eq!(h.len(), HDR);
        let got = parse_any_header(&h, frame).expect("parses");
        assert_eq!((got.gen, got.seq, got.len, got.fs_id), (7, 9, 14, 42));
        assert_eq!(check_payload(frame, &got, payload), Ok(()));
        assert!(check_payload(frame, &got, b"a batch of opz").is_err());
        assert!(parse_header(&h, frame, 41).is_none());
        for i in 0..HDR {
            let mut c = h.clone();
            c[i] ^= 0x08;
            assert!(parse_any_header(&c, frame).is_err(), "byte {i}");
        }
    }
    // A checkpoint header is no log record header, nor the other way round.
    let h = header(&CKP_FRAME, 1, 0, b"", 1);
    assert!(matches!(
        parse_any_header(&h, &LOG_FRAME),
        Err(FrameError::Magic { .. })
    ));
}
