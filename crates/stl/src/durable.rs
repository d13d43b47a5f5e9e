//! What survives a power cut or a killed process: the layer's last checkpoint and the records
//! committed since (the out-of-band metadata of completed journal entries, cache block
//! headers, band remap records), kept in a [`MetaLog`] — in memory, or in the drive image —
//! together with the media's damage: a checkpoint carries the damage state, and each record
//! the damage events of the media writes completed before it. A record is committed only
//! after the media write that carries its data has completed, and recovery rebuilds the whole
//! layer state and the damage from the log alone, by decoding it: the in-memory state is never
//! trusted after a power cut.

use crate::check::Finding;
use crate::damage::{decode_events, encode_events, Damage};
use crate::error::{Result, StlError};
use crate::metalog::{MetaLog, FRAME_VERSION_V1};
use crate::stats::StlStats;
use tegula_codec::{Dec, Enc, FormatError};
use tegula_device::media::{Media, MediaEvent};

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
    /// Sectors of the raw media (damage ranges and events are checked against it).
    pub media: u64,
}

impl Shape {
    /// Checks a logical extent.
    pub fn extent(&self, lba: u64, n: u64) -> std::result::Result<(), FormatError> {
        if n == 0 || lba.checked_add(n).is_none_or(|e| e > self.capacity) {
            return Err(FormatError::invalid(format!(
                "extent {lba}+{n} outside the drive"
            )));
        }
        Ok(())
    }

    /// Checks a cached position.
    pub fn pos(&self, pos: u64, n: u64) -> std::result::Result<(), FormatError> {
        if pos.checked_add(n).is_none_or(|e| e > self.pos_limit) {
            return Err(FormatError::invalid(format!(
                "position {pos}+{n} outside the media"
            )));
        }
        Ok(())
    }

    /// Checks an index against a bound.
    pub fn index(what: &str, i: u64, bound: usize) -> std::result::Result<usize, FormatError> {
        if i >= bound as u64 {
            return Err(FormatError::invalid(format!(
                "{what} {i} out of range (< {bound})"
            )));
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
    fn decode(d: &mut Dec<'_>, shape: &Shape) -> std::result::Result<Self, FormatError>;
    /// Encodes a record.
    fn encode_rec(r: &Self::Rec, e: &mut Enc);
    /// Decodes and checks a record.
    fn decode_rec(d: &mut Dec<'_>, shape: &Shape) -> std::result::Result<Self::Rec, FormatError>;
}

/// Decodes a whole checkpoint payload (trailing bytes are corruption).
pub(crate) fn decode_state<S: Replay>(
    b: &[u8],
    shape: &Shape,
) -> std::result::Result<S, FormatError> {
    let mut d = Dec::new(b);
    let s = S::decode(&mut d, shape)?;
    if d.remaining() != 0 {
        return Err(FormatError::invalid(format!(
            "{} trailing bytes after a checkpoint",
            d.remaining()
        )));
    }
    Ok(s)
}

/// Decodes a whole record payload.
pub(crate) fn decode_record<S: Replay>(
    b: &[u8],
    shape: &Shape,
) -> std::result::Result<S::Rec, FormatError> {
    let mut d = Dec::new(b);
    let r = S::decode_rec(&mut d, shape)?;
    if d.remaining() != 0 {
        return Err(FormatError::invalid(format!(
            "{} trailing bytes after a record",
            d.remaining()
        )));
    }
    Ok(r)
}

/// Decodes a checkpoint payload of frame version `version`: the damage (none before version
/// 2) and the layer state, all of it checked against `shape`.
pub(crate) fn decode_checkpoint_payload<S: Replay>(
    version: u8,
    b: &[u8],
    shape: &Shape,
) -> std::result::Result<(Option<Damage>, S), FormatError> {
    let mut d = Dec::new(b);
    let damage = if version == FRAME_VERSION_V1 {
        None
    } else {
        Some(Damage::decode(&mut d, shape.media)?)
    };
    Ok((damage, decode_state(d.rest(), shape)?))
}

/// Decodes a record payload of frame version `version`: the damage events (none before
/// version 2) and the layer record (none in a record of damage events only).
pub(crate) fn decode_record_payload<S: Replay>(
    version: u8,
    b: &[u8],
    shape: &Shape,
) -> std::result::Result<(Vec<MediaEvent>, Option<S::Rec>), FormatError> {
    if version == FRAME_VERSION_V1 {
        return Ok((Vec::new(), Some(decode_record::<S>(b, shape)?)));
    }
    let mut d = Dec::new(b);
    let events = decode_events(&mut d, shape.media)?;
    let rec = if d.remaining() == 0 {
        None
    } else {
        Some(decode_record::<S>(d.rest(), shape)?)
    };
    Ok((events, rec))
}

/// The operations on a layer's log that the drive needs, whatever the layer's state type.
pub(crate) trait LogOps {
    /// Makes the log durable on the host.
    fn sync(&mut self) -> Result<()>;
    /// Appends the media's queued damage events as a record of their own (FLUSH, power cuts).
    fn log_media(&mut self, m: &mut Media) -> Result<()>;
    /// Whether the log was loaded from a checkpoint of the first frame version (no damage in
    /// the log: an image written by an older build).
    fn is_v1(&self) -> bool;
    /// Writes the whole state, with the media's current damage, as a new checkpoint (of the
    /// current frame version).
    fn rewrite_checkpoint(&mut self, m: &mut Media) -> Result<()>;
    /// What loading the log noticed without failing (for warnings and checks).
    fn notes(&self) -> Vec<Finding>;
    /// Writes back, and syncs, a damaged last record that loading recovered from its tail
    /// copy (a writable open); whether there was one.
    fn write_repair(&mut self) -> Result<bool>;
}

/// The live state plus its durable image.
pub(crate) struct Durable<S: Replay> {
    /// Current state (what the controller has in memory).
    pub live: S,
    log: MetaLog,
    shape: Shape,
    buf: Enc,
    v1: bool,
}

impl<S: Replay> Durable<S> {
    /// Starts from `initial`; on a fresh log it becomes the first checkpoint (with no damage:
    /// the media is new), otherwise the caller loads the log with [`Self::recover`].
    pub fn new(initial: S, log: MetaLog, shape: Shape) -> Result<Self> {
        let mut d = Durable {
            live: initial,
            log,
            shape,
            buf: Enc::new(),
            v1: false,
        };
        if d.log.is_fresh() {
            d.write_checkpoint(&Damage::default())?;
        }
        Ok(d)
    }

    fn write_checkpoint(&mut self, damage: &Damage) -> Result<()> {
        let mut e = Enc::new();
        damage.encode(&mut e);
        self.live.encode(&mut e);
        self.log.write_checkpoint(e.as_bytes())?;
        self.v1 = false;
        Ok(())
    }

    /// Commits a record whose media write has completed, with the damage events of the media
    /// writes completed since the previous frame (the record's own among them).
    pub fn commit(&mut self, m: &mut Media, r: S::Rec) -> Result<()> {
        let events = m.take_events();
        self.buf.clear();
        encode_events(&mut self.buf, &events);
        S::encode_rec(&r, &mut self.buf);
        self.live.apply(&r);
        if !self.log.fits(self.buf.len()) || self.log.wants_compaction() {
            // The new checkpoint already contains `r` and the damage of the events.
            return self.write_checkpoint(&Damage::of(m));
        }
        self.log.append(self.buf.as_bytes())
    }

    /// A hint that the layer wrote a map copy: compact the log if it has grown.
    pub fn checkpoint(&mut self, m: &mut Media) -> Result<()> {
        if self.log.wants_compaction() {
            m.take_events();
            self.write_checkpoint(&Damage::of(m))?;
        }
        Ok(())
    }

    /// Throws away the live state and the media's damage and rebuilds both from the log (for
    /// a log of the first frame version, which has no damage, the media's damage is kept as
    /// the caller restored it); returns how many records were replayed.
    pub fn recover(&mut self, m: &mut Media) -> Result<usize> {
        let loaded = self.log.load()?;
        let generation = self.log.generation();
        let (version, bytes) = &loaded.checkpoint;
        let (damage, mut s) = decode_checkpoint_payload::<S>(*version, bytes, &self.shape)
            .map_err(|source| StlError::CorruptMeta {
                what: format!("metadata checkpoint of generation {generation}"),
                source,
            })?;
        // Check every record before touching the media: a bad one leaves the drive as it was.
        let mut replay = Vec::with_capacity(loaded.records.len());
        for (i, (version, r)) in loaded.records.iter().enumerate() {
            replay.push(
                decode_record_payload::<S>(*version, r, &self.shape).map_err(|source| {
                    StlError::CorruptMeta {
                        what: format!("metadata record {i} of generation {generation}"),
                        source,
                    }
                })?,
            );
        }
        m.take_events();
        if let Some(dmg) = damage {
            dmg.restore(m);
        }
        for (events, rec) in &replay {
            for e in events {
                m.apply_event(e);
            }
            if let Some(rec) = rec {
                s.apply(rec);
            }
        }
        self.live = s;
        self.v1 = *version == FRAME_VERSION_V1;
        Ok(replay.iter().filter(|(_, r)| r.is_some()).count())
    }

    /// [`Self::recover`], counted in a layer's `stats` (one more recovery, and the records
    /// this one replayed).
    pub fn recover_counted(&mut self, m: &mut Media, stats: &mut StlStats) -> Result<()> {
        let n = self.recover(m)?;
        stats.recoveries += 1;
        stats.replayed_records = n as u64;
        Ok(())
    }
}

impl<S: Replay> LogOps for Durable<S> {
    fn sync(&mut self) -> Result<()> {
        self.log.sync()
    }

    fn log_media(&mut self, m: &mut Media) -> Result<()> {
        if !m.has_events() {
            return Ok(());
        }
        let events = m.take_events();
        self.buf.clear();
        encode_events(&mut self.buf, &events);
        if !self.log.fits(self.buf.len()) || self.log.wants_compaction() {
            return self.write_checkpoint(&Damage::of(m));
        }
        self.log.append(self.buf.as_bytes())
    }

    fn is_v1(&self) -> bool {
        self.v1
    }

    fn rewrite_checkpoint(&mut self, m: &mut Media) -> Result<()> {
        m.take_events();
        self.write_checkpoint(&Damage::of(m))
    }

    fn notes(&self) -> Vec<Finding> {
        self.log.notes().to_vec()
    }

    fn write_repair(&mut self) -> Result<bool> {
        self.log.write_repair()
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
) -> std::result::Result<Option<usize>, FormatError> {
    match d.u64()? {
        u64::MAX => Ok(None),
        v => Shape::index(what, v, bound).map(Some),
    }
}

/// Encodes the payload of a layer's `Native` record: logical `[lo, hi)` is current at its
/// native location, `band` ending a staged rewrite.
pub(crate) fn enc_native(e: &mut Enc, band: Option<usize>, lo: u64, hi: u64) {
    enc_opt(e, band);
    e.u64(lo);
    e.u64(hi);
}

/// Decodes the payload of a `Native` record, checked against the drive's `shape`.
pub(crate) fn dec_native(
    d: &mut Dec<'_>,
    shape: &Shape,
) -> std::result::Result<(Option<usize>, u64, u64), FormatError> {
    let band = dec_opt(d, "band", shape.logical_bands)?;
    let (lo, hi) = (d.u64()?, d.u64()?);
    if lo > hi || hi > shape.capacity {
        return Err(FormatError::invalid(format!(
            "native range {lo}..{hi} outside the drive"
        )));
    }
    Ok((band, lo, hi))
}

/// Decodes the payload of a `Staged` record: the logical band whose image is staged.
pub(crate) fn dec_staged(
    d: &mut Dec<'_>,
    shape: &Shape,
) -> std::result::Result<usize, FormatError> {
    Shape::index("staged band", d.u64()?, shape.logical_bands)
}

/// Decodes a count of items of at least `item_bytes` each, refusing counts the remaining bytes
/// cannot hold (so a forged count cannot make a decoder allocate without bound).
pub(crate) fn dec_count(
    d: &mut Dec<'_>,
    what: &str,
    item_bytes: usize,
) -> std::result::Result<usize, FormatError> {
    let n = d.u64()?;
    if n > (d.remaining() / item_bytes.max(1)) as u64 {
        return Err(FormatError::invalid(format!(
            "{n} {what} do not fit the remaining bytes"
        )));
    }
    Ok(n as usize)
}
