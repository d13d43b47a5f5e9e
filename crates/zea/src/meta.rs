//! The per-extent metadata block ZEA writes after each extent's data: encode and decode.
//! The byte layout is specified in `docs/formats/zea.md`; decoding never panics on bad bytes.
//! The block's checksum is the codec's checksum suffix ([`BLOCK_FRAME`]) after the chunk
//! table; the data checksums it carries (`data_crc`, `chunk_crcs`) are fields.

use crate::error::MetaError;
use tegula_codec::checksum::{crc32c, crc32c_combine, Crc32cCombiner};
use tegula_codec::frame::{FrameError, Suffix};

/// Marker that identifies a ZEA metadata block ("ZEAMETA1").
pub const MAGIC: [u8; 8] = *b"ZEAMETA1";
/// Format version written by this code.
pub const VERSION: u16 = 1;
/// Bytes of the fixed header before the back pointers.
pub const HEADER_BYTES: usize = 72;
/// The block's frame: the crc32c of every byte before it, right after the chunk table.
pub const BLOCK_FRAME: Suffix = Suffix::plain("zea metadata block");

/// Decoded metadata of one extent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtentMeta {
    /// Sequence number of the extent within its zone (0 for the first since the last reset).
    pub seq: u64,
    /// Logical address the consumer gave (ZBA).
    pub zba: u64,
    /// A second consumer word (e.g. the owning file); 0 when unused.
    pub tag: u64,
    /// First LBA of the extent's data.
    pub data_lba: u64,
    /// Length of the data in bytes (the last sector is zero padded).
    pub data_len: u64,
    /// LBA of this metadata block (right after the data).
    pub meta_lba: u64,
    /// crc32c of the whole data.
    pub data_crc: u32,
    /// Bytes covered by each entry of `chunk_crcs` (a multiple of the sector size).
    pub chunk_bytes: u32,
    /// crc32c of each `chunk_bytes` piece of the data (the last may be shorter).
    pub chunk_crcs: Vec<u32>,
    /// Metadata LBAs of the previous extents in this zone, newest first.
    pub back: Vec<u64>,
}

impl ExtentMeta {
    /// Bytes the encoding needs (without the zero padding to a sector).
    pub fn encoded_len(back: usize, chunks: usize) -> usize {
        HEADER_BYTES + 8 * back + 4 * chunks + 4
    }

    /// Encodes into one sector of `sector` bytes. Returns `None` when it does not fit.
    pub fn encode(&self, sector: usize) -> Option<Vec<u8>> {
        let need = Self::encoded_len(self.back.len(), self.chunk_crcs.len());
        if need > sector || self.back.len() > u16::MAX as usize {
            return None;
        }
        let mut b = vec![0u8; sector];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&VERSION.to_le_bytes());
        b[10..12].copy_from_slice(&(self.back.len() as u16).to_le_bytes());
        b[12..16].copy_from_slice(&(self.chunk_crcs.len() as u32).to_le_bytes());
        b[16..20].copy_from_slice(&self.chunk_bytes.to_le_bytes());
        b[20..24].copy_from_slice(&self.data_crc.to_le_bytes());
        b[24..32].copy_from_slice(&self.seq.to_le_bytes());
        b[32..40].copy_from_slice(&self.zba.to_le_bytes());
        b[40..48].copy_from_slice(&self.tag.to_le_bytes());
        b[48..56].copy_from_slice(&self.data_lba.to_le_bytes());
        b[56..64].copy_from_slice(&self.data_len.to_le_bytes());
        b[64..72].copy_from_slice(&self.meta_lba.to_le_bytes());
        let mut p = HEADER_BYTES;
        for l in &self.back {
            b[p..p + 8].copy_from_slice(&l.to_le_bytes());
            p += 8;
        }
        for c in &self.chunk_crcs {
            b[p..p + 4].copy_from_slice(&c.to_le_bytes());
            p += 4;
        }
        BLOCK_FRAME.seal_at(&mut b, p);
        Some(b)
    }

    /// Decodes a metadata block read from `at_lba` with `sector`-byte sectors. Checks the
    /// marker, version, checksum, and that the block describes data that ends right before
    /// `at_lba`. Never panics.
    pub fn decode(b: &[u8], at_lba: u64, sector: u64) -> Result<Self, MetaError> {
        if b.len() < HEADER_BYTES + 4 {
            return Err(MetaError::Short(b.len()));
        }
        if b[0..8] != MAGIC {
            return Err(MetaError::NoMarker);
        }
        let version = u16le(b, 8);
        if version != VERSION {
            return Err(MetaError::Version(version));
        }
        let nback = u16le(b, 10) as usize;
        let nchunks = u32le(b, 12) as usize;
        let need = HEADER_BYTES
            .checked_add(nback.saturating_mul(8))
            .and_then(|v| v.checked_add(nchunks.saturating_mul(4)))
            .and_then(|v| v.checked_add(4))
            .ok_or(MetaError::Layout("counts overflow"))?;
        if need > b.len() {
            return Err(MetaError::Layout("counts exceed the block"));
        }
        BLOCK_FRAME.open_at(b, need - 4).map_err(|e| match e {
            FrameError::Checksum { .. } => MetaError::Checksum,
            e => MetaError::Frame(e),
        })?;
        let m = ExtentMeta {
            chunk_bytes: u32le(b, 16),
            data_crc: u32le(b, 20),
            seq: u64le(b, 24),
            zba: u64le(b, 32),
            tag: u64le(b, 40),
            data_lba: u64le(b, 48),
            data_len: u64le(b, 56),
            meta_lba: u64le(b, 64),
            back: (0..nback).map(|i| u64le(b, HEADER_BYTES + 8 * i)).collect(),
            chunk_crcs: (0..nchunks)
                .map(|i| u32le(b, HEADER_BYTES + 8 * nback + 4 * i))
                .collect(),
        };
        if m.meta_lba != at_lba {
            return Err(MetaError::Misplaced {
                recorded: m.meta_lba,
                at: at_lba,
            });
        }
        if m.data_len == 0 || sector == 0 {
            return Err(MetaError::Layout("empty extent"));
        }
        let sectors = m.data_len.div_ceil(sector);
        if m.data_lba.checked_add(sectors) != Some(m.meta_lba) {
            return Err(MetaError::Layout("data does not end at the metadata block"));
        }
        let cb = m.chunk_bytes as u64;
        if cb == 0 || !cb.is_multiple_of(sector) || m.data_len.div_ceil(cb) != nchunks as u64 {
            return Err(MetaError::Layout("chunk table does not cover the data"));
        }
        if m.back.iter().any(|&l| l >= m.data_lba) {
            return Err(MetaError::Layout("back pointer does not point backwards"));
        }
        Ok(m)
    }

    /// Sectors the data occupies.
    pub fn data_sectors(&self, sector: u64) -> u64 {
        self.data_len.div_ceil(sector)
    }

    /// The LBA right after this extent's metadata block.
    pub fn end_lba(&self) -> u64 {
        self.meta_lba + 1
    }
}

/// Chooses the chunk size (a power-of-two multiple of the sector) so that the chunk table of a
/// `len`-byte extent fits beside `back` back pointers in one sector. `None` if nothing fits.
pub fn chunk_bytes_for(len: u64, sector: u64, back: usize) -> Option<u64> {
    let room = (sector as usize).checked_sub(HEADER_BYTES + 8 * back + 4)? / 4;
    if room == 0 {
        return None;
    }
    let mut cb = sector;
    while len.div_ceil(cb) > room as u64 {
        cb = cb.checked_mul(2)?;
    }
    Some(cb)
}

/// crc32c of each `cb`-byte piece of `data`.
pub fn chunk_crcs(data: &[u8], cb: u64) -> Vec<u32> {
    data.chunks(cb.max(1) as usize).map(crc32c).collect()
}

/// crc32c of each `cb`-byte piece of `data` and of the whole, reading every byte once (the
/// whole's checksum is combined from the pieces').
pub fn chunk_and_data_crcs(data: &[u8], cb: u64) -> (Vec<u32>, u32) {
    crcs_of_pieces(data, cb, crc32c)
}

/// [`chunk_and_data_crcs`] of `data` while appending it to `out`: each piece is checksummed
/// right after it is copied, from the copy while it is still in the processor's cache, so
/// copy and checksum make one pass over memory.
pub fn append_with_crcs(out: &mut Vec<u8>, data: &[u8], cb: u64) -> (Vec<u32>, u32) {
    crcs_of_pieces(data, cb, |c| {
        let at = out.len();
        out.extend_from_slice(c);
        crc32c(&out[at..])
    })
}

/// The checksums of each `cb`-byte piece of `data` (`crc_of` checksums one) and of the whole.
fn crcs_of_pieces(data: &[u8], cb: u64, mut crc_of: impl FnMut(&[u8]) -> u32) -> (Vec<u32>, u32) {
    let cb = cb.max(1) as usize;
    let full = Crc32cCombiner::new(cb);
    let mut whole = crc32c(&[]);
    let mut crcs = Vec::with_capacity(data.len().div_ceil(cb));
    for c in data.chunks(cb) {
        let crc = crc_of(c);
        whole = if c.len() == cb {
            full.combine(whole, crc)
        } else {
            crc32c_combine(whole, crc, c.len())
        };
        crcs.push(crc);
    }
    (crcs, whole)
}

fn u16le(b: &[u8], at: usize) -> u16 {
    let mut a = [0u8; 2];
    a.copy_from_slice(&b[at..at + 2]);
    u16::from_le_bytes(a)
}

fn u32le(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn u64le(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn sample() -> ExtentMeta {
        let data = vec![5u8; 10_000];
        let cb = chunk_bytes_for(10_000, 4096, 3).unwrap();
        ExtentMeta {
            seq: 7,
            zba: 99,
            tag: 3,
            data_lba: 100,
            data_len: 10_000,
            meta_lba: 103,
            data_crc: crc32c(&data),
            chunk_bytes: cb as u32,
            chunk_crcs: chunk_crcs(&data, cb),
            back: vec![90, 80, 70],
        }
    }

    /// The chunk checksums and the whole's, from one pass, equal those computed apart.
    #[test]
    fn chunk_and_data_crcs_in_one_pass_match() {
        let data: Vec<u8> = (0..70_000u32).map(|i| (i ^ (i >> 9)) as u8).collect();
        for len in [1, 511, 512, 4096, 10_000, 65_536, 70_000] {
            for cb in [512u64, 4096, 8192] {
                let d = &data[..len];
                assert_eq!(
                    chunk_and_data_crcs(d, cb),
                    (chunk_crcs(d, cb), crc32c(d)),
                    "len {len} chunk {cb}"
                );
                let mut out = vec![7u8; 3];
                assert_eq!(
                    append_with_crcs(&mut out, d, cb),
                    (chunk_crcs(d, cb), crc32c(d)),
                    "len {len} chunk {cb}"
                );
                assert_eq!(&out[..3], &[7, 7, 7]);
                assert_eq!(&out[3..], d);
            }
        }
    }

    #[test]
    fn round_trip() {
        let m = sample();
        let b = m.encode(4096).unwrap();
        assert_eq!(ExtentMeta::decode(&b, 103, 4096).unwrap(), m);
    }

    /// The suffix is the plain crc32c of the bytes before it, right after the chunk table
    /// (`docs/formats/zea.md`), and the padding after it is not covered.
    #[test]
    fn the_block_crc_follows_the_chunk_table() {
        let m = sample();
        let b = m.encode(4096).unwrap();
        let p = ExtentMeta::encoded_len(3, m.chunk_crcs.len()) - 4;
        assert_eq!(&b[p..p + 4], &crc32c(&b[..p]).to_le_bytes());
        assert!(b[p + 4..].iter().all(|&x| x == 0));
        let mut c = b.clone();
        c[p + 4] = 1;
        assert_eq!(ExtentMeta::decode(&c, 103, 4096).unwrap(), m);
        c[p - 1] ^= 1;
        assert_eq!(ExtentMeta::decode(&c, 103, 4096), Err(MetaError::Checksum));
    }

    #[test]
    fn block_read_at_wrong_lba_is_rejected() {
        let b = sample().encode(4096).unwrap();
        assert!(matches!(
            ExtentMeta::decode(&b, 104, 4096),
            Err(MetaError::Misplaced { .. })
        ));
    }

    #[test]
    fn every_single_bit_flip_in_the_used_bytes_is_detected() {
        let m = sample();
        let b = m.encode(4096).unwrap();
        let used = ExtentMeta::encoded_len(3, m.chunk_crcs.len());
        for i in 0..used {
            for bit in 0..8 {
                let mut c = b.clone();
                c[i] ^= 1 << bit;
                assert!(
                    ExtentMeta::decode(&c, 103, 4096).is_err(),
                    "byte {i} bit {bit}"
                );
            }
        }
    }

    #[test]
    fn random_and_mutated_bytes_never_panic() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let good = sample().encode(4096).unwrap();
        for _ in 0..20_000 {
            let len = rng.gen_range(0..4200);
            let mut b: Vec<u8> = if rng.gen_bool(0.5) {
                (0..len).map(|_| rng.gen()).collect()
            } else {
                let mut g = good.clone();
                g.truncate(len.min(g.len()));
                for _ in 0..rng.gen_range(1..8) {
                    if g.is_empty() {
                        break;
                    }
                    let i = rng.gen_range(0..g.len());
                    g[i] = rng.gen();
                }
                g
            };
            if rng.gen_bool(0.3) && b.len() >= 8 {
                b[..8].copy_from_slice(&MAGIC);
            }
            let _ = ExtentMeta::decode(&b, rng.gen(), 4096);
        }
    }

    #[test]
    fn chunk_size_grows_with_the_extent() {
        assert_eq!(chunk_bytes_for(4096, 4096, 8), Some(4096));
        let cb = chunk_bytes_for(8 << 20, 4096, 8).unwrap();
        assert!(cb >= 8192 && (8u64 << 20).div_ceil(cb) <= 1000);
        assert_eq!(chunk_bytes_for(1, 512, 200), None);
    }
}
