//! Decoding arbitrary bytes never panics: every read of the codec, every frame layout, a
//! checksum suffix and a sealed header return a value or an error; whatever decodes
//! re-encodes to the same bytes.
#![allow(missing_docs)]

use proptest::prelude::*;
use tegula_codec::frame::{Format, SealedHeader, Suffix};
use tegula_codec::{Dec, Enc};

const SLOT: Format = Format::slot("state", b"TGLASTAT", 1);
const REC: Format = Format::record("frame", b"TGLM", 1, &[1, 2]);
const COPY: Format = Format::copy("manifest", b"SMRDBMAN", 3)
    .reading_from(1)
    .masked();
const SUFFIX: Suffix = Suffix::masked("block");
const SEALED: SealedHeader = SealedHeader::new("record", b"TGLFSLOG", 32);

/// Runs every read in the order `ops` picks until one fails.
fn read_all(b: &[u8], ops: &[u8]) {
    let mut d = Dec::new(b);
    for op in ops {
        let ok = match op % 9 {
            0 => d.u8().is_ok(),
            1 => d.u16().is_ok(),
            2 => d.u32().is_ok(),
            3 => d.u64().is_ok(),
            4 => d.i64().is_ok(),
            5 => d.varint().is_ok(),
            6 => d.bytes_u32().is_ok(),
            7 => d.bytes_varint().is_ok(),
            _ => d.take(*op as usize).is_ok(),
        };
        assert!(d.pos() <= b.len());
        if !ok {
            break;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn reads_of_arbitrary_bytes_never_panic(
        b in proptest::collection::vec(any::<u8>(), 0..64),
        ops in proptest::collection::vec(any::<u8>(), 0..24),
    ) {
        read_all(&b, &ops);
    }

    #[test]
    fn frames_of_arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..128)) {
        for fmt in [SLOT, REC, COPY] {
            let _ = fmt.decode_header(&b);
            let _ = fmt.peek_header(&b);
            if let Ok(f) = fmt.decode(&b) {
                // (Reserved bytes are not interpreted, so compare what was decoded.)
                let again = fmt.encode(f.header.kind, f.header.seq, f.payload);
                let g = fmt.decode(&again).map(|g| (g.header, g.payload.to_vec()));
                prop_assert_eq!(g, Ok((f.header, f.payload.to_vec())));
            }
        }
    }

    #[test]
    fn suffixes_and_sealed_headers_of_arbitrary_bytes_never_panic(
        b in proptest::collection::vec(any::<u8>(), 0..128),
        at in 0usize..140,
        magic in any::<bool>(),
    ) {
        if let Ok(body) = SUFFIX.open(&b) {
            let mut e = Enc::new();
            e.raw(body);
            SUFFIX.seal(&mut e);
            prop_assert_eq!(e.as_bytes(), &b[..]);
        }
        let _ = SUFFIX.open_at(&b, at);
        let mut s = b.clone();
        if magic {
            s.splice(0..0, b"TGLFSLOG".iter().copied());
        }
        if let Ok(h) = SEALED.open(&s) {
            let payload = &s[SEALED.header_len()..];
            let again = SEALED.encode(h.fields, payload);
            let same = SEALED.check_payload(&h, payload).is_ok();
            prop_assert_eq!(same, again[..] == s[..SEALED.header_len()]);
        }
    }

    #[test]
    fn frames_behind_a_valid_magic_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..128),
        version in 0u8..3,
    ) {
        let mut s = b"TGLASTAT".to_vec();
        s.push(version);
        s.extend_from_slice(&tail);
        let _ = SLOT.decode(&s);
        let mut r = b"TGLM".to_vec();
        r.push(version);
        r.extend_from_slice(&tail);
        let _ = REC.decode(&r);
    }

    #[test]
    fn values_round_trip(a in any::<u8>(), b in any::<u16>(), c in any::<u32>(), d in any::<u64>(),
                         e in any::<i64>(), v in any::<u64>(),
                         s in proptest::collection::vec(any::<u8>(), 0..40)) {
        let mut w = Enc::new();
        w.u8(a);
        w.u16(b);
        w.u32(c);
        w.u64(d);
        w.i64(e);
        w.varint(v);
        w.bytes_u32(&s);
        w.bytes_varint(&s);
        w.raw(&s);
        let bytes = w.into_bytes();
        let mut r = Dec::new(&bytes);
        prop_assert_eq!(r.u8(), Ok(a));
        prop_assert_eq!(r.u16(), Ok(b));
        prop_assert_eq!(r.u32(), Ok(c));
        prop_assert_eq!(r.u64(), Ok(d));
        prop_assert_eq!(r.i64(), Ok(e));
        prop_assert_eq!(r.varint(), Ok(v));
        prop_assert_eq!(r.bytes_u32(), Ok(&s[..]));
        prop_assert_eq!(r.bytes_varint(), Ok(&s[..]));
        prop_assert_eq!(r.take(s.len()), Ok(&s[..]));
        prop_assert!(r.is_empty());
        // Every proper prefix fails somewhere instead of panicking.
        for n in 0..bytes.len() {
            let mut r = Dec::new(&bytes[..n]);
            let all = r.u8().is_ok() && r.u16().is_ok() && r.u32().is_ok() && r.u64().is_ok()
                && r.i64().is_ok() && r.varint().is_ok() && r.bytes_u32().is_ok()
                && r.bytes_varint().is_ok() && r.take(s.len()).is_ok();
            prop_assert!(!all, "prefix of {} bytes decoded whole", n);
        }
    }
}
