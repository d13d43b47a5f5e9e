//! What survives a power cut: the layer's last checkpoint and the records committed since
//! (the out-of-band metadata of completed journal entries, cache block headers, band remap
//! records), kept in a [`MetaLog`] — in memory, or in the drive image. A record is committed
//! only after the media write that carries its data has completed, and recovery rebuilds the
//! whole layer state from the log alone, by decoding it: the in-memory state is never trusted
//! after a power cut.

use crate::error::{Result, StlError};
use crate::metalog::MetaLog;
use tegula_codec::{Dec, Enc};

/// The dimensions every decoded state and record is checked against, so that a record that
/// passed its checksum but names a band or sector outside the drive is refused rather than
/// indexing out of bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Shape {
    /// Host-visible sectors.
    pub capacity: u64,
    /// Upper bound (exclusive) of a cached block's address (physical sector, or flash sector).
    pub pos_limit: u64,
    /// Physical bands.
    pub phys_bands: usize,
    /// Logical bands.
    pub logical_bands: usize,
    /// Cache bands (set-associative layer).
    pub cache_bands: usize,
    /// Zones (fully associative layer).
    pub zones: usize,
}

impl Shape {
    /// Checks a logical extent.
    pub fn extent(&self, lba: u64, n: u64) -> std::result::Result<(), String> {
        if n == 0 || lba.checked_add(n).is_none_or(|e| e > self.capacity) {
            return Err(format!("extent {lba}+{n} outside the drive"));
        }
        Ok(())
    }

    /// Checks a cached position.
    pub fn pos(&self, pos: u64, n: u64) -> std::result::Result<(), String> {
        if pos.checked_add(n).is_none_or(|e| e > self.pos_limit) {
            return Err(format!("position {pos}+{n} outside the media"));
        }
        Ok(())
    }

    /// Checks an index against a bound.
    pub fn index(what: &str, i: u64, bound: usize) -> std::result::Result<usize, String> {
        if i >= bound as u64 {
            return Err(format!("{what} {i} out of range (< {bound})"));
        }
        Ok(i as usize)
    }
}

/// State rebuilt by replaying records, with its encoding.
pub(crate) trait Replay: Sized {
    /// The record type.
    type Rec;
    /// Applies one committed record.
    fn apply(&mut self, r: &Self::Rec);
    /// Encodes the whole state (a checkpoint).
    fn encode(&self, e: &mut Enc);
    /// Decodes and checks a checkpoint.
    fn decode(d: &mut Dec<'_>, shape: &Shape) -> std::result::Result<Self, String>;
    /// Encodes a record.
    fn encode_rec(r: &Self::Rec, e: &mut Enc);
    /// Decodes and checks a record.
    fn decode_rec(d: &mut Dec<'_>, shape: &Shape) -> std::result::Result<Self::Rec, String>;
}

/// Decodes a whole checkpoint payload (trailing bytes are corruption).
pub(crate) fn decode_state<S: Replay>(b: &[u8], shape: &Shape) -> std::result::Result<S, String> {
    let mut d = Dec::new(b);
    let s = S::decode(&mut d, shape)?;
    if d.remaining() != 0 {
        return Err(format!(
            "{} trailing bytes after a checkpoint",
            d.remaining()
        ));
    }
    Ok(s)
}

/// Decodes a whole record payload.
pub(crate) fn decode_record<S: Replay>(
    b: &[u8],
    shape: &Shape,
) -> std::result::Result<S::Rec, String> {
    let mut d = Dec::new(b);
    let r = S::decode_rec(&mut d, shape)?;
    if d.remaining() != 0 {
        return Err(format!("{} trailing bytes after a record", d.remaining()));
    }
    Ok(r)
}

/// The live state plus its durable image.
pub(crate) struct Durable<S: Replay> {
    /// Current state (what the controller has in memory).
    pub live: S,
    log: MetaLog,
    shape: Shape,
    buf: Enc,
}

impl<S: Replay> Durable<S> {
    /// Starts from `initial`; on a fresh log it becomes the first checkpoint, otherwise the
    /// caller loads the log with [`Self::recover`].
    pub fn new(initial: S, log: MetaLog, shape: Shape) -> Result<Self> {
        let mut d = Durable {
            live: initial,
            log,
            shape,
            buf: Enc::new(),
        };
        if d.log.is_fresh() {
            d.write_checkpoint()?;
        }
        Ok(d)
    }

    fn write_checkpoint(&mut self) -> Result<()> {
        let mut e = Enc::new();
        self.live.encode(&mut e);
        self.log.write_checkpoint(e.as_bytes())
    }

    /// Commits a record whose media write has completed.
    pub fn commit(&mut self, r: S::Rec) -> Result<()> {
        self.buf.clear();
        S::encode_rec(&r, &mut self.buf);
        self.live.apply(&r);
        if !self.log.fits(self.buf.len()) || self.log.wants_compaction() {
            // The new checkpoint already contains `r`.
            return self.write_checkpoint();
        }
        self.log.append(self.buf.as_bytes())
    }

    /// A hint that the layer wrote a map copy: compact the log if it has grown.
    pub fn checkpoint(&mut self) -> Result<()> {
        if self.log.wants_compaction() {
            self.write_checkpoint()?;
        }
        Ok(())
    }

    /// Makes the log durable on the host.
    pub fn sync(&mut self) -> Result<()> {
        self.log.sync()
    }

    /// Throws away the live state and rebuilds it from the log; returns how many records were
    /// replayed.
    pub fn recover(&mut self) -> Result<usize> {
        let loaded = self.log.load()?;
        let mut s: S = decode_state(&loaded.checkpoint, &self.shape).map_err(|p| {
            StlError::Corrupt(format!(
                "metadata checkpoint of generation {}: {p}",
                self.log.generation()
            ))
        })?;
        for (i, r) in loaded.records.iter().enumerate() {
            let rec = decode_record::<S>(r, &self.shape).map_err(|p| {
                StlError::Corrupt(format!(
                    "metadata record {i} of generation {}: {p}",
                    self.log.generation()
                ))
            })?;
            s.apply(&rec);
        }
        self.live = s;
        Ok(loaded.records.len())
    }
}

/// Encodes an optional index (`u64::MAX` for none).
pub(crate) fn enc_opt(e: &mut Enc, v: Option<usize>) {
    e.u64(v.map_or(u64::MAX, |v| v as u64));
}

/// Decodes an optional index checked against `bound`.
pub(crate) fn dec_opt(
    d: &mut Dec<'_>,
    what: &str,
    bound: usize,
) -> std::result::Result<Option<usize>, String> {
    match d.u64()? {
        u64::MAX => Ok(None),
        v => Shape::index(what, v, bound).map(Some),
    }
}

/// Decodes a count of items of at least `item_bytes` each, refusing counts the remaining bytes
/// cannot hold (so a forged count cannot make a decoder allocate without bound).
pub(crate) fn dec_count(
    d: &mut Dec<'_>,
    what: &str,
    item_bytes: usize,
) -> std::result::Result<usize, String> {
    let n = d.u64()?;
    if n > (d.remaining() / item_bytes.max(1)) as u64 {
        return Err(format!("{n} {what} do not fit the remaining bytes"));
    }
    Ok(n as usize)
}
