//! Log tail slots: the records not yet in a log band, written to one sector of the
//! conventional area at every write, so that each record leaves the process before `put`
//! returns (the promise LevelDB and RocksDB make) without padding every record to a sector of
//! the log band. Two slots are written in turn, so a write torn by a power cut leaves the
//! other intact. One slot (`docs/formats/smrdb.md`, "Log tail slots"):
//!
//! `magic "SLT1" | zone u32 | sector u64 | generation u64 | len u32 | payload crc u32 |
//! header crc u32 | payload (len bytes) | zero padding to the sector`
//!
//! the codec's sealed header [`TAIL_FRAME`] (masked crc32c), the payload being batch records
//! as in a log chunk. `zone` and `sector` name the log band position the records would be
//! written at as a chunk: recovery uses a slot only when that is exactly where the replayed
//! log ends, and only its records that continue the replayed sequence numbers.

use tegula_codec::frame::{FrameError, SealedHeader};
use tegula_codec::{Dec, Enc, FormatError};

/// The header of a tail slot: magic "SLT1", zone u32, sector u64, generation u64, len u32,
/// payload crc, header crc (masked).
pub const TAIL_FRAME: SealedHeader = SealedHeader::new("log tail slot", b"SLT1", 24).masked();
/// Bytes of a tail slot header.
pub const TAIL_HEADER: usize = TAIL_FRAME.header_len();

/// A decoded tail slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tail<'a> {
    /// Log band the records continue.
    pub zone: u32,
    /// Sector of that band at which they would be written as a chunk.
    pub sector: u64,
    /// Incremented at every slot write; the newer of the two slots has the larger one.
    pub generation: u64,
    /// Batch records (see [`super::records`]).
    pub payload: &'a [u8],
}

/// Bytes of records a slot of one `ss`-byte sector holds.
pub fn capacity(ss: u64) -> usize {
    (ss as usize).saturating_sub(TAIL_HEADER)
}

/// Encodes a slot holding `payload` into one sector of `ss` bytes (`None` when it does not
/// fit: see [`capacity`]).
pub fn encode(zone: u32, sector: u64, generation: u64, payload: &[u8], ss: u64) -> Option<Vec<u8>> {
    if payload.len() > capacity(ss) {
        return None;
    }
    let mut f = Enc::with_capacity(24);
    f.u32(zone);
    f.u64(sector);
    f.u64(generation);
    f.u32(payload.len() as u32);
    let mut b = TAIL_FRAME.encode(f.as_bytes(), payload);
    b.extend_from_slice(payload);
    b.resize(ss as usize, 0);
    Some(b)
}

/// Decodes the slot at the start of `b`: `Ok(None)` when no slot was ever written there (no
/// magic), `Err` when one is there but damaged or cut short.
pub fn decode(b: &[u8]) -> Result<Option<Tail<'_>>, FormatError> {
    if !TAIL_FRAME.has_magic(b) {
        return Ok(None);
    }
    let h = TAIL_FRAME.open(b)?;
    let mut d = h.dec();
    let zone = d.u32().map_err(FrameError::from)?;
    let sector = d.u64().map_err(FrameError::from)?;
    let generation = d.u64().map_err(FrameError::from)?;
    let len = d.u32().map_err(FrameError::from)?;
    let mut r = Dec::new(b);
    r.take(TAIL_HEADER).map_err(FrameError::from)?;
    let payload = r.take(len as usize).map_err(FrameError::from)?;
    TAIL_FRAME.check_payload(&h, payload)?;
    Ok(Some(Tail {
        zone,
        sector,
        generation,
        payload,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{decode_payload, encode_batch, Op};

    fn payload() -> Vec<u8> {
        let ops: Vec<Op> = vec![(b"k".to_vec(), Some(b"v".to_vec())), (b"d".to_vec(), None)];
        let mut p = encode_batch(9, &ops);
        p.extend(encode_batch(11, &ops[..1]));
        p
    }

    #[test]
    fn a_slot_round_trips_and_every_flip_is_seen() {
        let p = payload();
        let b = encode(3, 17, 42, &p, 512).unwrap();
        assert_eq!(b.len(), 512);
        let t = decode(&b).unwrap().unwrap();
        assert_eq!((t.zone, t.sector, t.generation), (3, 17, 42));
        assert_eq!(decode_payload(t.payload).unwrap().len(), 2);
        for i in 0..TAIL_HEADER + p.len() {
            let mut c = b.clone();
            c[i] ^= 0x04;
            assert!(
                !matches!(decode(&c), Ok(Some(ref t)) if t.payload == &p[..] && t.generation == 42),
                "flip at {i} went unseen"
            );
        }
        assert_eq!(decode(&[0u8; 512]), Ok(None));
        // An empty slot (every record already in the band).
        let e = encode(3, 18, 43, &[], 512).unwrap();
        assert_eq!(decode(&e).unwrap().unwrap().payload, b"");
    }

    #[test]
    fn a_payload_larger_than_a_sector_has_no_slot() {
        assert_eq!(capacity(512), 512 - TAIL_HEADER);
        assert!(encode(0, 0, 1, &vec![1u8; capacity(512) + 1], 512).is_none());
        assert!(encode(0, 0, 1, &vec![1u8; capacity(512)], 512).is_some());
    }

    #[test]
    fn bytes_follow_the_documented_layout() {
        let crc = |b: &[u8]| tegula_codec::frame::Crc::Masked.of(b);
        let b = encode(1, 2, 3, b"\x01\x00", 512).unwrap();
        let mut want = b"SLT1".to_vec();
        want.extend_from_slice(&1u32.to_le_bytes());
        want.extend_from_slice(&2u64.to_le_bytes());
        want.extend_from_slice(&3u64.to_le_bytes());
        want.extend_from_slice(&2u32.to_le_bytes());
        want.extend_from_slice(&crc(b"\x01\x00").to_le_bytes());
        let hc = crc(&want);
        want.extend_from_slice(&hc.to_le_bytes());
        want.extend_from_slice(b"\x01\x00");
        want.resize(512, 0);
        assert_eq!(b, want);
    }

    #[test]
    fn garbage_never_panics() {
        let b = encode(1, 2, 3, &payload(), 512).unwrap();
        for cut in 0..b.len() {
            let _ = decode(&b[..cut]);
        }
        let _ = decode(b"SLT1");
    }
}
