//! Entry points for the fuzz targets (`fuzz/fuzz_targets/stl_*.rs`): each runs one decoder of
//! persistent bytes on arbitrary input — as the image loader would — and asserts that whatever
//! decodes re-encodes to bytes that decode to the same value. Not a stable API.

use crate::damage::{encode_events, Damage};
use crate::durable::{decode_checkpoint_payload, decode_record_payload, Replay, Shape};
use crate::extmap::ExtentMap;
use crate::fullassoc::FState;
use crate::journal::JState;
use crate::metalog::{MemMeta, MetaLog, FRAME_VERSION, FRAME_VERSION_V1};
use crate::setassoc::SState;
use tegula_codec::{Dec, Enc};

/// The drive dimensions fuzzed payloads are checked against (small numbers, so that random
/// bytes reach the in-range paths now and then).
fn shape() -> Shape {
    Shape {
        capacity: 1 << 16,
        pos_limit: 1 << 18,
        phys_bands: 64,
        logical_bands: 48,
        cache_bands: 4,
        zones: 3,
        media: 1 << 18,
    }
}

/// Frame version from the first byte, payload from the rest.
fn split(data: &[u8]) -> Option<(u8, &[u8])> {
    let (&v, rest) = data.split_first()?;
    Some((
        if v & 1 == 0 {
            FRAME_VERSION
        } else {
            FRAME_VERSION_V1
        },
        rest,
    ))
}

fn checkpoint_of<S: Replay + PartialEq + std::fmt::Debug>(version: u8, b: &[u8]) {
    let sh = shape();
    let Ok((damage, state)) = decode_checkpoint_payload::<S>(version, b, &sh) else {
        return;
    };
    let mut e = Enc::new();
    if let Some(d) = &damage {
        d.encode(&mut e);
    }
    state.encode(&mut e);
    let again = decode_checkpoint_payload::<S>(version, e.as_bytes(), &sh);
    assert_eq!(
        again,
        Ok((damage, state)),
        "a decoded checkpoint re-encodes"
    );
}

/// A metadata checkpoint payload (damage and layer state) of each translation layer.
pub fn checkpoint_payload(data: &[u8]) {
    let Some((version, b)) = split(data) else {
        return;
    };
    checkpoint_of::<JState>(version, b);
    checkpoint_of::<SState>(version, b);
    checkpoint_of::<FState>(version, b);
}

fn record_of<S: Replay>(version: u8, b: &[u8])
where
    S::Rec: PartialEq + std::fmt::Debug,
{
    let sh = shape();
    let Ok((events, rec)) = decode_record_payload::<S>(version, b, &sh) else {
        return;
    };
    let mut e = Enc::new();
    if version != FRAME_VERSION_V1 {
        encode_events(&mut e, &events);
    }
    if let Some(r) = &rec {
        S::encode_rec(r, &mut e);
    }
    let again = decode_record_payload::<S>(version, e.as_bytes(), &sh);
    assert_eq!(again, Ok((events, rec)), "a decoded record re-encodes");
}

/// A metadata record payload (damage events and layer record) of each translation layer.
pub fn record_payload(data: &[u8]) {
    let Some((version, b)) = split(data) else {
        return;
    };
    record_of::<JState>(version, b);
    record_of::<SState>(version, b);
    record_of::<FState>(version, b);
}

/// The extent map and the damage state on their own.
pub fn extent_map(data: &[u8]) {
    let sh = shape();
    let mut d = Dec::new(data);
    if let Ok(m) = ExtentMap::decode(&mut d, &sh) {
        let mut e = Enc::new();
        m.encode(&mut e);
        let again = ExtentMap::decode(&mut Dec::new(e.as_bytes()), &sh);
        assert_eq!(again, Ok(m), "a decoded extent map re-encodes");
    }
    if let Ok(dmg) = Damage::decode(&mut Dec::new(data), sh.media) {
        let mut e = Enc::new();
        dmg.encode(&mut e);
        let again = Damage::decode(&mut Dec::new(e.as_bytes()), sh.media);
        assert_eq!(again, Ok(dmg), "a decoded damage state re-encodes");
    }
}

/// The metadata log loader over two slots cut from `data` (the first two bytes say where):
/// loading never panics, and what it loads decodes as the drive would decode it.
pub fn metadata_log(data: &[u8]) {
    let Some((cut, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let at = usize::from(u16::from_le_bytes(*cut)).min(rest.len());
    let (a, b) = rest.split_at(at);
    let mut log = MetaLog::new(
        Box::new(MemMeta::with_slots([a.to_vec(), b.to_vec()])),
        (a.len().max(b.len()) as u64).max(64),
        false,
    );
    let Ok(loaded) = log.load() else {
        return;
    };
    let sh = shape();
    let (v, c) = &loaded.checkpoint;
    let _ = decode_checkpoint_payload::<JState>(*v, c, &sh);
    for (v, r) in &loaded.records {
        let _ = decode_record_payload::<JState>(*v, r, &sh);
    }
}
