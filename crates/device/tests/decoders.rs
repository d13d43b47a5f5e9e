//! The image decoders never panic on bad bytes: tens of thousands of random and mutated inputs
//! (seeded, so a failure replays) for `decode_header` and `decode_state`, plus hand-crafted
//! inputs with valid checksums and hostile contents. Corrupted inputs must be errors.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::panic::catch_unwind;
use tegula_codec::checksum::crc32c;
use tegula_codec::Enc;
use tegula_device::image::{
    decode_header, decode_state, encode_header, encode_state, layout_for, ImageHeader, ImageState,
    HEADER_REGION, IMAGE_MAGIC, STATE_MAGIC,
};
use tegula_device::{DiskConfig, RangeSet, Stats, ZoneCondition};

fn header() -> Vec<u8> {
    let c = tiny_hm_config(64, 8);
    let (slot, data) = layout_for(&c);
    encode_header(&ImageHeader {
        version: 1,
        config: c,
        state_offset: HEADER_REGION,
        slot_size: slot,
        data_offset: data,
    })
}

fn state() -> Vec<u8> {
    let mut destroyed = RangeSet::new();
    destroyed.insert(10, 20);
    destroyed.insert(40, 41);
    let mut injected = RangeSet::new();
    injected.insert(7, 9);
    encode_state(&ImageState {
        seq: 3,
        now: 123_456,
        zones: (0..20)
            .map(|i| {
                (
                    ZoneCondition::from_code(i % 8).unwrap(),
                    i % 3 == 0,
                    i as u64 * 256,
                )
            })
            .collect(),
        destroyed,
        injected,
        stats: Stats {
            reads: 5,
            zone_bytes_written: vec![1, 2, 3],
            ..Default::default()
        },
    })
}

/// Runs both decoders on `b`; panics (failing the test) if either panics. Returns whether each
/// accepted the input.
fn decode_both(b: &[u8]) -> (bool, bool) {
    let h = catch_unwind(|| decode_header(b).is_ok()).unwrap_or_else(|_| {
        panic!(
            "decode_header panicked on {} bytes: {:02x?}",
            b.len(),
            &b[..b.len().min(64)]
        )
    });
    let s = catch_unwind(|| decode_state(b).is_ok()).unwrap_or_else(|_| {
        panic!(
            "decode_state panicked on {} bytes: {:02x?}",
            b.len(),
            &b[..b.len().min(64)]
        )
    });
    (h, s)
}

#[test]
fn random_bytes_never_decode_and_never_panic() {
    let mut rng = SmallRng::seed_from_u64(1);
    for i in 0..20_000 {
        let len = rng.gen_range(0..600);
        let mut b: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        // Half of them get a valid magic so the decoders read further.
        if i % 2 == 0 && len >= 8 {
            b[..8].copy_from_slice(if i % 4 == 0 {
                &IMAGE_MAGIC
            } else {
                &STATE_MAGIC
            });
            if len >= 12 && i % 8 < 4 {
                b[8..12].copy_from_slice(&1u32.to_le_bytes());
            }
        }
        assert_eq!(decode_both(&b), (false, false), "case {i} decoded");
    }
}

/// One random mutation of `orig` that certainly changes it: flips, overwrites, truncation,
/// insertion, or a forged length field.
fn mutate(rng: &mut SmallRng, orig: &[u8]) -> Vec<u8> {
    let mut b = orig.to_vec();
    match rng.gen_range(0..5) {
        0 => {
            for _ in 0..rng.gen_range(1..5) {
                let i = rng.gen_range(0..b.len());
                b[i] ^= rng.gen_range(1..=255u8);
            }
        }
        1 => {
            let n = rng.gen_range(0..b.len());
            b.truncate(n);
        }
        2 => {
            let i = rng.gen_range(0..b.len());
            let extra: Vec<u8> = (0..rng.gen_range(1..9)).map(|_| rng.gen()).collect();
            b.splice(i..i, extra);
        }
        3 => {
            // A length or count field somewhere in the first 64 bytes.
            let i = rng.gen_range(8..60usize.min(b.len() - 4));
            let v: u32 = match rng.gen_range(0..3) {
                0 => u32::MAX,
                1 => rng.gen(),
                _ => rng.gen_range(0..100_000),
            };
            b[i..i + 4].copy_from_slice(&v.to_le_bytes());
        }
        _ => {
            let i = rng.gen_range(0..b.len());
            let n = rng.gen_range(1..32).min(b.len() - i);
            for x in &mut b[i..i + n] {
                *x = rng.gen();
            }
        }
    }
    b
}

#[test]
fn mutated_headers_and_states_are_errors_and_never_panic() {
    let mut rng = SmallRng::seed_from_u64(2);
    let h = header();
    let s = state();
    assert_eq!(decode_both(&h), (true, false));
    assert_eq!(decode_both(&s), (false, true));
    for i in 0..15_000 {
        for (orig, which) in [(&h, 0), (&s, 1)] {
            let m = mutate(&mut rng, orig);
            if m == *orig {
                continue;
            }
            let (hd, sd) = decode_both(&m);
            let accepted = if which == 0 { hd } else { sd };
            assert!(
                !accepted,
                "case {i}: a mutated {} decoded",
                ["header", "state"][which]
            );
        }
    }
}

#[test]
fn trailing_bytes_after_a_valid_record_are_ignored() {
    let h = header();
    let mut long = h.clone();
    long.extend_from_slice(&[0xab; 1000]);
    assert_eq!(decode_header(&long), decode_header(&h));
    let s = state();
    let mut long = s.clone();
    long.resize(s.len() + 4096, 0);
    assert_eq!(decode_state(&long), decode_state(&s));
}

/// A header record with a correct checksum around arbitrary configuration text.
fn forged_header(cfg: &[u8], flags: u32, layout: (u64, u64, u64)) -> Vec<u8> {
    let mut e = Enc::new();
    e.raw(&IMAGE_MAGIC);
    e.u32(1);
    e.u32(48 + cfg.len() as u32);
    e.u32(cfg.len() as u32);
    e.u32(flags);
    e.u64(layout.0);
    e.u64(layout.1);
    e.u64(layout.2);
    e.raw(cfg);
    let crc = crc32c(e.as_bytes());
    e.u32(crc);
    e.into_bytes()
}

#[test]
fn checksummed_headers_with_hostile_contents_are_errors() {
    let good = tiny_hm_config(64, 8).to_toml();
    let ok_layout = (HEADER_REGION, 1 << 20, 4 << 20);
    assert!(decode_header(&forged_header(good.as_bytes(), 1, ok_layout)).is_ok());
    let deep = format!("x = {}{}", "[".repeat(5000), "]".repeat(5000));
    // (An empty configuration is valid: the default profile.)
    let hostile: Vec<Vec<u8>> = vec![
        vec![0xff, 0xfe, 0x00, 0x80],
        b"profile = \"nope\"".to_vec(),
        b"capacity = -1".to_vec(),
        b"sector_size = 0".to_vec(),
        b"[zones]\nzone_size = 0".to_vec(),
        b"[media]\nrpm = 0".to_vec(),
        b"[media]\nheads = 100000".to_vec(),
        b"[shingle]\noverlap_tracks = 0".to_vec(),
        b"capacity = \"1B\"".to_vec(),
        b"= = =".to_vec(),
        deep.into_bytes(),
    ];
    for cfg in hostile {
        let r = catch_unwind(|| decode_header(&forged_header(&cfg, 1, ok_layout)).is_ok());
        assert_eq!(
            r.ok(),
            Some(false),
            "config {:?}",
            String::from_utf8_lossy(&cfg[..cfg.len().min(40)])
        );
    }
    // Layouts that overlap or overflow, and a flag that contradicts the configuration.
    for layout in [
        (0, 1 << 20, 4 << 20),
        (HEADER_REGION, 0, 4 << 20),
        (HEADER_REGION, 1 << 20, HEADER_REGION),
        (HEADER_REGION, u64::MAX, u64::MAX),
        (u64::MAX, u64::MAX / 2, u64::MAX),
    ] {
        assert!(
            decode_header(&forged_header(good.as_bytes(), 1, layout)).is_err(),
            "{layout:?}"
        );
    }
    assert!(decode_header(&forged_header(good.as_bytes(), 0, ok_layout)).is_err());
}

/// A state record with a correct checksum around an arbitrary body.
fn forged_state(body: &[u8]) -> Vec<u8> {
    let mut e = Enc::new();
    e.raw(&STATE_MAGIC);
    e.u32(1);
    e.u32(body.len() as u32);
    e.u64(1);
    e.raw(body);
    let crc = crc32c(e.as_bytes());
    e.u32(crc);
    e.into_bytes()
}

#[test]
fn checksummed_states_with_hostile_counts_are_errors_without_huge_allocations() {
    let body = |f: &dyn Fn(&mut Enc)| {
        let mut e = Enc::new();
        f(&mut e);
        e.into_bytes()
    };
    let cases = [
        body(&|e| {
            e.u64(0);
            e.u32(u32::MAX);
        }),
        body(&|e| {
            e.u64(0);
            e.u32(1);
            e.u8(9);
            e.u8(0);
            e.u64(0);
        }),
        body(&|e| {
            e.u64(0);
            e.u32(0);
            e.u32(u32::MAX);
        }),
        body(&|e| {
            e.u64(0);
            e.u32(0);
            e.u32(1);
            e.u64(5);
            e.u64(5);
        }),
        body(&|e| {
            e.u64(0);
            e.u32(0);
            e.u32(0);
            e.u32(0);
            e.u32(u32::MAX);
        }),
        body(&|e| {
            e.u64(0);
            e.u32(0);
            e.u32(0);
            e.u32(0);
            e.u32(5);
            e.raw(b"nope!");
        }),
        body(&|_| {}),
    ];
    for (i, b) in cases.iter().enumerate() {
        let r = catch_unwind(|| decode_state(&forged_state(b)).is_ok());
        assert_eq!(r.ok(), Some(false), "case {i}");
    }
    // The empty but complete body is valid.
    let stats = serde_json::to_vec(&Stats::default()).unwrap();
    let ok = body(&|e| {
        e.u64(0);
        e.u32(0);
        e.u32(0);
        e.u32(0);
        e.u32(stats.len() as u32);
        e.raw(&stats);
    });
    assert!(decode_state(&forged_state(&ok)).is_ok());
}

#[test]
fn configurations_from_toml_never_panic() {
    let mut rng = SmallRng::seed_from_u64(3);
    let base = tiny_hm_config(64, 8).to_toml();
    let lines: Vec<&str> = base.lines().collect();
    for i in 0..300 {
        let mut text: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        for _ in 0..rng.gen_range(1..4) {
            let k = rng.gen_range(0..text.len());
            if let Some((key, _)) = text[k].split_once(" = ") {
                let v = match rng.gen_range(0..6) {
                    0 => "0".to_string(),
                    1 => "-1".to_string(),
                    2 => u64::MAX.to_string(),
                    3 => "\"x\"".to_string(),
                    4 => "1e308".to_string(),
                    _ => rng.gen::<u32>().to_string(),
                };
                text[k] = format!("{key} = {v}");
            }
        }
        let t = text.join("\n");
        let r = catch_unwind(|| DiskConfig::from_toml(&t).map(|c| c.to_toml()).is_ok());
        assert!(r.is_ok(), "case {i}: from_toml panicked on\n{t}");
    }
}
