//! Every decoder of persistent bytes against random input: it returns an error or a value,
//! never panics, and a value it returns re-encodes to the bytes it came from (so nothing is
//! silently reinterpreted).

use crate::durable::{decode_record, decode_state, Replay, Shape};
use crate::fullassoc::FState;
use crate::image::{decode_drive_state, decode_header};
use crate::journal::JState;
use crate::metalog::decode_frame;
use crate::setassoc::SState;
use proptest::prelude::*;
use tegula_codec::Enc;

fn shape() -> Shape {
    Shape {
        capacity: 1 << 20,
        pos_limit: 1 << 22,
        phys_bands: 300,
        logical_bands: 200,
        cache_bands: 4,
        zones: 3,
        media: 1 << 22,
    }
}

fn states_and_records(b: &[u8]) {
    let sh = shape();
    if let Ok(s) = decode_state::<JState>(b, &sh) {
        let mut e = Enc::default();
        s.encode(&mut e);
        assert_eq!(decode_state::<JState>(e.as_bytes(), &sh).ok(), Some(s));
    }
    if let Ok(s) = decode_state::<SState>(b, &sh) {
        let mut e = Enc::default();
        s.encode(&mut e);
        assert_eq!(e.as_bytes(), b);
    }
    if let Ok(s) = decode_state::<FState>(b, &sh) {
        let mut e = Enc::default();
        s.encode(&mut e);
        assert_eq!(e.as_bytes(), b);
    }
    if let Ok(r) = decode_record::<JState>(b, &sh) {
        let mut e = Enc::default();
        JState::encode_rec(&r, &mut e);
        assert_eq!(e.as_bytes(), b);
    }
    if let Ok(r) = decode_record::<SState>(b, &sh) {
        let mut e = Enc::default();
        SState::encode_rec(&r, &mut e);
        assert_eq!(e.as_bytes(), b);
    }
    if let Ok(r) = decode_record::<FState>(b, &sh) {
        let mut e = Enc::default();
        FState::encode_rec(&r, &mut e);
        assert_eq!(e.as_bytes(), b);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn layer_decoders_never_panic(b in proptest::collection::vec(any::<u8>(), 0..256)) {
        states_and_records(&b);
    }

    #[test]
    fn record_shaped_input_never_panics(tag in 1u8..5, words in proptest::collection::vec(0u64..400, 0..12)) {
        // Small numbers hit the in-range paths that fully random bytes rarely reach.
        let mut b = vec![tag];
        for w in words {
            b.extend_from_slice(&w.to_le_bytes());
        }
        states_and_records(&b);
        states_and_records(&b[1..]);
    }

    #[test]
    fn image_decoders_never_panic(b in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_header(&b);
        let _ = decode_drive_state(&b);
        let _ = decode_frame(&b);
        let mut h = b"TGLADMSR".to_vec();
        h.extend_from_slice(&b);
        let _ = decode_header(&h);
        let mut f = b"TGLM\x01".to_vec();
        f.extend_from_slice(&b);
        let _ = decode_frame(&f);
    }
}
