//! Crash-safe metadata in the conventional zones: a superblock (two copies), two checkpoint
//! slots written alternately, and a log of op batches. Recovery takes the newest valid
//! checkpoint and replays the log records of its generation in order. The log ends at the
//! first position that does not hold the next record, *unless* a valid record of the same
//! generation follows further on: then the record there was damaged after it was written,
//! and the mount fails with [`FsError::Corrupt`] naming it instead of dropping every later
//! record. Layout and the argument: `docs/formats/fs.md`.

use crate::error::{FsError, Result};
use std::sync::Arc;
use tegula_codec::frame::{FrameError, Sealed, SealedHeader, Suffix};
use tegula_codec::{Dec, Enc, FormatError};
use tegula_device::ZonedDevice;

/// The first bytes of each superblock copy (LBA 0 and 1); how tools recognise a tegula fs.
pub const SB_MAGIC: [u8; 8] = *b"TGLFSSB1";
const CKP_MAGIC: [u8; 8] = *b"TGLFSCKP";
const LOG_MAGIC: [u8; 8] = *b"TGLFSLOG";
/// Format version of the superblock, checkpoints and log a new file system gets. Version 2
/// ends every log record with a copy of its header (the trailer), so that a damaged last
/// record is told from one a power cut tore; version 1 file systems are read and written as
/// before (no trailers).
pub const FORMAT_VERSION: u32 = 2;
/// The oldest format version still read.
pub const MIN_FORMAT_VERSION: u32 = 1;
/// The superblock's frame: the crc32c of its first 84 bytes, after them.
const SB_FRAME: Suffix = Suffix::plain("fs superblock");
/// Bytes of the superblock before its checksum.
const SB_LEN: usize = 8 + 4 * 5 + 8 * 7;
/// The header of a checkpoint: magic, then gen, seq, payload_len and fs_id (u64 each), the
/// payload's crc32c and the header's own.
const CKP_FRAME: SealedHeader = SealedHeader::new("fs checkpoint", &CKP_MAGIC, 32);
/// The header (and, from version 2, the trailer) of a log record: as a checkpoint's.
const LOG_FRAME: SealedHeader = SealedHeader::new("fs log record", &LOG_MAGIC, 32);
const HDR: usize = LOG_FRAME.header_len();
/// The two superblock copies: name and LBA (`docs/formats/fs.md`).
pub const SUPERBLOCK_COPIES: [(char, u64); 2] = [('A', 0), ('B', 1)];

/// Where things are; written once by mkfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superblock {
    /// Format version ([`FORMAT_VERSION`] for a new file system).
    pub version: u32,
    /// Sector size in bytes.
    pub sector: u32,
    /// Number of zones of the device.
    pub zones: u32,
    /// Sectors per zone.
    pub zone_sectors: u64,
    /// First sequential zone (all zones before it are conventional).
    pub first_seq_zone: u32,
    /// LBA of checkpoint slot 0.
    pub slot0: u64,
    /// LBA of checkpoint slot 1.
    pub slot1: u64,
    /// Sectors per checkpoint slot.
    pub slot_sectors: u64,
    /// First LBA of the log.
    pub log_lba: u64,
    /// Sectors of the log.
    pub log_sectors: u64,
    /// ZEA back pointers per extent.
    pub back_pointers: u32,
    /// Random identity of this file system (rejects records of an earlier mkfs).
    pub fs_id: u64,
}

impl Superblock {
    /// Encodes into one sector (at least 128 bytes): its fields, then the checksum suffix
    /// [`SB_FRAME`] at byte 84.
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::with_capacity((self.sector as usize).max(128));
        e.raw(&SB_MAGIC);
        e.u32(self.version);
        e.u32(self.sector);
        e.u32(self.zones);
        e.u32(self.first_seq_zone);
        e.u64(self.zone_sectors);
        e.u64(self.slot0);
        e.u64(self.slot1);
        e.u64(self.slot_sectors);
        e.u64(self.log_lba);
        e.u64(self.log_sectors);
        e.u32(self.back_pointers);
        e.u64(self.fs_id);
        SB_FRAME.seal(&mut e);
        let mut b = e.into_bytes();
        b.resize((self.sector as usize).max(128), 0);
        b
    }

    /// Decodes a superblock sector, checking magic, checksum and version in that order;
    /// never panics.
    pub fn decode(b: &[u8]) -> std::result::Result<Superblock, FormatError> {
        let field = FormatError::field("fs superblock");
        if Dec::new(b).take(SB_MAGIC.len()).map_err(field)? != SB_MAGIC {
            return Err(FrameError::Magic {
                name: SB_FRAME.name(),
            }
            .into());
        }
        let mut d = Dec::new(SB_FRAME.open_at(b, SB_LEN)?);
        d.take(SB_MAGIC.len()).map_err(field)?;
        let version = d.u32().map_err(field)?;
        if !(MIN_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(FrameError::Version {
                name: SB_FRAME.name(),
                found: version,
            }
            .into());
        }
        Ok(Superblock {
            version,
            sector: d.u32().map_err(field)?,
            zones: d.u32().map_err(field)?,
            first_seq_zone: d.u32().map_err(field)?,
            zone_sectors: d.u64().map_err(field)?,
            slot0: d.u64().map_err(field)?,
            slot1: d.u64().map_err(field)?,
            slot_sectors: d.u64().map_err(field)?,
            log_lba: d.u64().map_err(field)?,
            log_sectors: d.u64().map_err(field)?,
            back_pointers: d.u32().map_err(field)?,
            fs_id: d.u64().map_err(field)?,
        })
    }
}

/// The header of a checkpoint or log record ([`CKP_FRAME`], [`LOG_FRAME`]):
/// magic 8 | gen 8 | seq 8 | payload_len 8 | fs_id 8 | payload_crc 4 | header_crc 4.
fn header(frame: &SealedHeader, gen: u64, seq: u64, payload: &[u8], fs_id: u64) -> Vec<u8> {
    let mut f = Enc::with_capacity(32);
    f.u64(gen);
    f.u64(seq);
    f.u64(payload.len() as u64);
    f.u64(fs_id);
    frame.encode(f.as_bytes(), payload)
}

/// A parsed, self-consistent header.
struct Hdr {
    gen: u64,
    seq: u64,
    len: u64,
    fs_id: u64,
    payload_crc: u32,
}

/// A header of this frame (magic) with a valid checksum, of any file system.
fn parse_any_header(b: &[u8], frame: &SealedHeader) -> std::result::Result<Hdr, FrameError> {
    let h = frame.open(b)?;
    let mut d = h.dec();
    Ok(Hdr {
        gen: d.u64()?,
        seq: d.u64()?,
        len: d.u64()?,
        fs_id: d.u64()?,
        payload_crc: h.payload_crc,
    })
}

/// A header of this file system (`fs_id`).
fn parse_header(b: &[u8], frame: &SealedHeader, fs_id: u64) -> Option<Hdr> {
    parse_any_header(b, frame).ok().filter(|h| h.fs_id == fs_id)
}

/// Checks that `payload` has the checksum its header `h` (of `frame`) holds.
fn check_payload(
    frame: &SealedHeader,
    h: &Hdr,
    payload: &[u8],
) -> std::result::Result<(), FrameError> {
    let sealed = Sealed {
        fields: &[],
        payload_crc: h.payload_crc,
    };
    frame.check_payload(&sealed, payload)
}

/// What recovery found.
pub struct Recovered {
    /// The journal, positioned after the last valid record.
    pub journal: Journal,
    /// The checkpoint payload.
    pub checkpoint: Vec<u8>,
    /// Payloads of the log records to replay, in order.
    pub records: Vec<Vec<u8>>,
}

/// A superblock copy that does not hold the superblock in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadCopy {
    /// Name of the copy (`A` at LBA 0, `B` at LBA 1).
    pub name: char,
    /// Its LBA.
    pub lba: u64,
    /// What is wrong with it.
    pub why: String,
}

/// Writer of checkpoints and log records.
pub struct Journal {
    dev: Arc<dyn ZonedDevice>,
    sb: Superblock,
    /// LBA of the superblock copy the mount took `sb` from.
    sb_lba: u64,
    gen: u64,
    next_seq: u64,
    tail: u64,
}

impl Journal {
    /// The superblock.
    pub fn superblock(&self) -> &Superblock {
        &self.sb
    }

    /// Name and LBA of the superblock copy in use (the first that decodes).
    pub fn superblock_copy(&self) -> (char, u64) {
        SUPERBLOCK_COPIES
            .into_iter()
            .find(|&(_, lba)| lba == self.sb_lba)
            .unwrap_or(SUPERBLOCK_COPIES[0])
    }

    /// Reads every superblock copy and returns those that do not hold the superblock in use:
    /// unreadable, damaged, or (though valid) different. An unreadable copy is reported, not
    /// an error.
    pub fn bad_superblock_copies(&self) -> Vec<BadCopy> {
        let ss = self.sb.sector as usize;
        let (in_use, _) = self.superblock_copy();
        let mut bad = Vec::new();
        for (name, lba) in SUPERBLOCK_COPIES {
            let mut b = vec![0u8; ss];
            let why = match self.dev.read(lba, &mut b) {
                Err(e) => Some(format!("unreadable: {e}")),
                Ok(_) => match Superblock::decode(&b) {
                    Err(e) => Some(e.to_string()),
                    Ok(sb) if sb != self.sb => Some(format!("differs from copy {in_use} in use")),
                    Ok(_) => None,
                },
            };
            if let Some(why) = why {
                bad.push(BadCopy { name, lba, why });
            }
        }
        bad
    }

    /// Rewrites the superblock copy at `lba` from the superblock in use and flushes the
    /// device cache.
    pub fn rewrite_superblock_copy(&self, lba: u64) -> Result<()> {
        if !SUPERBLOCK_COPIES.iter().any(|&(_, l)| l == lba) {
            return Err(FsError::Invalid(format!(
                "LBA {lba} holds no superblock copy"
            )));
        }
        self.dev.write(lba, &self.sb.encode())?;
        self.dev.flush()?;
        Ok(())
    }

    /// Whether log records end with a trailer (format version 2 and later).
    fn trailers(&self) -> bool {
        self.sb.version >= 2
    }

    /// Sectors of a log record of `len` payload bytes: header and payload, and on version 2
    /// a trailer (a copy of the header) in the last 48 bytes of its last sector.
    fn record_sectors(&self, len: u64) -> u64 {
        let trailer = if self.trailers() { HDR as u64 } else { 0 };
        (HDR as u64)
            .saturating_add(len)
            .saturating_add(trailer)
            .div_ceil(self.sb.sector as u64)
    }

    /// Whether the record at `lba` whose header is `head` was written whole: its trailer,
    /// read back, is the same header. Under the device's write model (a power cut keeps a
    /// prefix of a write's sectors) a torn record lacks its last sector, so a record whose
    /// trailer is there and whose payload fails its checksum was damaged after it was written.
    fn trailer_matches(&self, lba: u64, head: &[u8]) -> Result<bool> {
        if !self.trailers() || head.len() < HDR {
            return Ok(false);
        }
        let Ok(h) = parse_any_header(head, &LOG_FRAME) else {
            return Ok(false);
        };
        let sectors = self.record_sectors(h.len);
        let last = self.read(lba + sectors - 1, 1)?;
        let at = last.len() - HDR;
        Ok(last[at..] == head[..HDR])
    }

    /// On version 2, the trailer of a whole record `next_seq` of this generation that starts
    /// at `lba` although the header there does not decode: proof that the record was written
    /// and its header damaged since. Searched within the log's end.
    fn trailer_of_damaged_header(&self, lba: u64) -> Result<Option<u64>> {
        if !self.trailers() {
            return Ok(None);
        }
        let ss = self.sb.sector as u64;
        let end = self.sb.log_lba + self.sb.log_sectors;
        let window = ((4u64 << 20) / ss).max(1);
        let mut at = lba;
        while at < end {
            let n = window.min(end - at);
            let buf = self.read(at, n)?;
            for i in 0..n {
                let sector = &buf[(i * ss) as usize..((i + 1) * ss) as usize];
                let Ok(h) = parse_any_header(&sector[sector.len() - HDR..], &LOG_FRAME) else {
                    continue;
                };
                if h.fs_id != self.sb.fs_id || h.gen != self.gen {
                    continue;
                }
                if h.seq == self.next_seq && at + i + 1 == lba + self.record_sectors(h.len) {
                    return Ok(Some(at + i));
                }
            }
            at += n;
        }
        Ok(None)
    }

    /// Log sectors in use since the last checkpoint.
    pub fn log_used(&self) -> u64 {
        self.tail - self.sb.log_lba
    }

    /// LBA of the slot that holds the current checkpoint (generation parity picks it).
    pub fn checkpoint_lba(&self) -> u64 {
        if self.gen.is_multiple_of(2) {
            self.sb.slot0
        } else {
            self.sb.slot1
        }
    }

    /// Current checkpoint generation.
    pub fn generation(&self) -> u64 {
        self.gen
    }

    /// Lays out the conventional zones, writes both superblock copies and a first checkpoint.
    pub fn format(
        dev: Arc<dyn ZonedDevice>,
        back_pointers: u32,
        fs_id: u64,
        checkpoint: &[u8],
    ) -> Result<Journal> {
        let info = dev.info();
        let conv = info.conventional_zones as u64 * info.zone_sectors;
        if info.zone_sectors == 0 || info.conventional_zones == 0 || conv < 64 {
            return Err(FsError::NotFs(
                "the device needs conventional zones (64 sectors at least) for metadata".into(),
            ));
        }
        if info.conventional_zones >= info.zones {
            return Err(FsError::NotFs("the device has no sequential zones".into()));
        }
        let slot_sectors = (conv - 2) / 4;
        let sb = Superblock {
            version: FORMAT_VERSION,
            sector: info.sector_size,
            zones: info.zones,
            zone_sectors: info.zone_sectors,
            first_seq_zone: info.conventional_zones,
            slot0: 2,
            slot1: 2 + slot_sectors,
            slot_sectors,
            log_lba: 2 + 2 * slot_sectors,
            log_sectors: conv - 2 - 2 * slot_sectors,
            back_pointers,
            fs_id,
        };
        let b = sb.encode();
        dev.write(0, &b)?;
        dev.write(1, &b)?;
        let mut j = Journal {
            dev,
            sb,
            sb_lba: 0,
            gen: 0,
            next_seq: 0,
            tail: 0,
        };
        // Invalidate whatever an earlier mkfs left in the other slot and the log start.
        let zero = vec![0u8; j.sb.sector as usize];
        j.dev.write(j.sb.slot1, &zero)?;
        j.dev.write(j.sb.log_lba, &zero)?;
        j.checkpoint(checkpoint)?;
        Ok(j)
    }

    fn read(&self, lba: u64, sectors: u64) -> Result<Vec<u8>> {
        let mut b = vec![0u8; (sectors * self.sb.sector as u64) as usize];
        self.dev.read(lba, &mut b)?;
        Ok(b)
    }

    /// Reads the superblock, the newest valid checkpoint and the log after it.
    pub fn open(dev: Arc<dyn ZonedDevice>) -> Result<Recovered> {
        let info = dev.info();
        let ss = info.sector_size as usize;
        let mut b = vec![0u8; 2 * ss];
        dev.read(0, &mut b)?;
        let (sb, sb_lba) = match Superblock::decode(&b[..ss]) {
            Ok(sb) => (sb, 0),
            Err(e0) => match Superblock::decode(&b[ss..]) {
                Ok(sb) => (sb, 1),
                Err(e1) => return Err(FsError::NotFs(format!("{e0}; copy: {e1}"))),
            },
        };
        if sb.sector != info.sector_size || sb.zones != info.zones {
            return Err(FsError::NotFs(
                "superblock does not match the device geometry".into(),
            ));
        }
        let mut j = Journal {
            dev,
            sb,
            sb_lba,
            gen: 0,
            next_seq: 0,
            tail: 0,
        };
        let mut best: Option<(u64, Vec<u8>)> = None;
        for slot in [j.sb.slot0, j.sb.slot1] {
            if let Some((gen, payload)) = j.read_checkpoint(slot) {
                if best.as_ref().is_none_or(|(g, _)| gen > *g) {
                    best = Some((gen, payload));
                }
            }
        }
        let (gen, checkpoint) = best.ok_or_else(|| {
            tracing::error!(
                "no valid checkpoint in either slot (LBA {} and {})",
                j.sb.slot0,
                j.sb.slot1
            );
            FsError::Corrupt(format!(
                "no valid checkpoint at LBA {} or {} (conventional zone 0)",
                j.sb.slot0, j.sb.slot1
            ))
        })?;
        j.gen = gen;
        j.tail = j.sb.log_lba;
        j.refuse_a_lost_newer_checkpoint()?;
        let records = j.scan_log()?;
        Ok(Recovered {
            journal: j,
            checkpoint,
            records,
        })
    }

    /// Fails when the log proves that a checkpoint newer than the one recovery found was
    /// written: the log restarts with the first record of a generation only after that
    /// generation's checkpoint is durable, so a valid record of a later generation at the log's
    /// start means the newer checkpoint was acknowledged and is now damaged. Recovering from
    /// the older one would drop every change since (its records were overwritten), so this is
    /// corruption, never a quiet rollback. Without such a record a damaged newer checkpoint was
    /// torn by a power cut, or nothing followed it: the older checkpoint and its records, still
    /// in the log, give the same state.
    fn refuse_a_lost_newer_checkpoint(&self) -> Result<()> {
        let first = self.read(self.sb.log_lba, 1)?;
        let Some(h) = parse_header(&first, &LOG_FRAME, self.sb.fs_id) else {
            return Ok(());
        };
        if h.gen <= self.gen {
            return Ok(());
        }
        let (newer, older) = if h.gen.is_multiple_of(2) {
            (self.sb.slot0, self.sb.slot1)
        } else {
            (self.sb.slot1, self.sb.slot0)
        };
        Err(FsError::Corrupt(format!(
            "checkpoint of generation {} at LBA {newer} is damaged, but the metadata log at LBA \
             {} holds records of that generation, so it was written: mounting from the older \
             checkpoint (generation {}, LBA {older}) would lose every change made between them",
            h.gen, self.sb.log_lba, self.gen
        )))
    }

    fn read_checkpoint(&self, slot: u64) -> Option<(u64, Vec<u8>)> {
        let first = self.read(slot, 1).ok()?;
        let h = parse_header(&first, &CKP_FRAME, self.sb.fs_id)?;
        let total = (HDR as u64)
            .saturating_add(h.len)
            .div_ceil(self.sb.sector as u64);
        if total > self.sb.slot_sectors {
            return None;
        }
        let all = self.read(slot, total).ok()?;
        let payload = all.get(HDR..HDR + h.len as usize)?;
        check_payload(&CKP_FRAME, &h, payload).ok()?;
        Some((h.gen, payload.to_vec()))
    }

    fn scan_log(&mut self) -> Result<Vec<Vec<u8>>> {
        let ss = self.sb.sector as u64;
        let end = self.sb.log_lba + self.sb.log_sectors;
        let mut out = Vec::new();
        let window = ((4u64 << 20) / ss).max(1);
        let mut buf_lba = self.tail;
        let mut buf: Vec<u8> = Vec::new();
        loop {
            if self.tail >= end {
                break;
            }
            // Make sure the header sector is buffered.
            let need_hdr = self.tail + 1;
            if need_hdr > buf_lba + buf.len() as u64 / ss || self.tail < buf_lba {
                buf_lba = self.tail;
                let n = window.min(end - buf_lba);
                buf = self.read(buf_lba, n)?;
            }
            let off = ((self.tail - buf_lba) * ss) as usize;
            let head = &buf[off..off + ss as usize];
            let h = match parse_any_header(head, &LOG_FRAME) {
                // A record of an earlier generation or file system (the log never reached it
                // since the checkpoint), or a sector never written: the clean end of the log.
                Ok(h) if h.gen != self.gen || h.fs_id != self.sb.fs_id => break,
                Err(_) if head.iter().all(|&b| b == 0) => break,
                Err(why) => {
                    if let Some(t) = self.trailer_of_damaged_header(self.tail)? {
                        return Err(self.corrupt(
                            self.tail,
                            &format!(
                                "has a damaged header, but the record's trailer at LBA {t} \
                                 shows it was written whole"
                            ),
                        ));
                    }
                    self.end_or_corrupt(self.tail, &format!("no valid record header: {why}"))?;
                    break;
                }
                Ok(h) => h,
            };
            if h.seq != self.next_seq {
                return Err(self.corrupt(
                    self.tail,
                    &format!("holds record {} of this generation", h.seq),
                ));
            }
            let sectors = self.record_sectors(h.len);
            if sectors > end - self.tail {
                self.end_or_corrupt(self.tail, "record runs past the end of the log")?;
                break;
            }
            if self.tail + sectors > buf_lba + buf.len() as u64 / ss {
                buf_lba = self.tail;
                buf = self.read(buf_lba, sectors.max(window.min(end - buf_lba)))?;
            }
            let off = ((self.tail - buf_lba) * ss) as usize;
            let payload = &buf[off + HDR..off + HDR + h.len as usize];
            if let Err(why) = check_payload(&LOG_FRAME, &h, payload) {
                let head = buf[off..off + HDR].to_vec();
                if self.trailer_matches(self.tail, &head)? {
                    return Err(self.corrupt(
                        self.tail,
                        "fails its payload checksum, but its trailer shows it was written \
                         whole (not a torn write)",
                    ));
                }
                self.end_or_corrupt(self.tail, &why.to_string())?;
                break;
            }
            out.push(payload.to_vec());
            self.tail += sectors;
            self.next_seq += 1;
        }
        Ok(out)
    }

    fn corrupt(&self, lba: u64, what: &str) -> FsError {
        FsError::Corrupt(format!(
            "metadata log (conventional zone {}): the place of record {} of generation {} at \
             LBA {lba} {what}",
            lba / self.sb.zone_sectors.max(1),
            self.next_seq,
            self.gen
        ))
    }

    /// Decides what a bad record at `lba` (the place of record `next_seq`) is. Each record is
    /// flushed before the next is written, so only the last one can be torn by a crash: if a
    /// valid record of this generation with a later sequence number lies behind it, it was
    /// damaged after it was written, which is corruption; otherwise it is the torn end.
    fn end_or_corrupt(&self, lba: u64, why: &str) -> Result<()> {
        match self.later_record(lba + 1)? {
            Some((at, seq)) => Err(self.corrupt(
                lba,
                &format!("is damaged ({why}) but record {seq} of the same generation follows at LBA {at}"),
            )),
            None => Ok(()),
        }
    }

    /// The first valid record of this generation with a sequence number above `next_seq`
    /// that starts in `from..` the log's end: `(lba, seq)`. The search stops at a valid
    /// record of another generation or file system: every sector between a damaged record
    /// and a later record of this generation was written in this generation, so none holds
    /// one.
    fn later_record(&self, from: u64) -> Result<Option<(u64, u64)>> {
        let ss = self.sb.sector as u64;
        let end = self.sb.log_lba + self.sb.log_sectors;
        let window = ((4u64 << 20) / ss).max(1);
        let mut lba = from;
        while lba < end {
            let n = window.min(end - lba);
            let buf = self.read(lba, n)?;
            for i in 0..n {
                let at = (i * ss) as usize;
                let Ok(h) = parse_any_header(&buf[at..], &LOG_FRAME) else {
                    continue;
                };
                if h.gen != self.gen || h.fs_id != self.sb.fs_id {
                    return Ok(None);
                }
                if h.seq <= self.next_seq {
                    continue;
                }
                let sectors = self.record_sectors(h.len);
                if sectors > end - (lba + i) {
                    continue;
                }
                let rec = self.read(lba + i, sectors)?;
                let payload = rec.get(HDR..HDR + h.len as usize).unwrap_or_default();
                if check_payload(&LOG_FRAME, &h, payload).is_ok() {
                    return Ok(Some((lba + i, h.seq)));
                }
            }
            lba += n;
        }
        Ok(None)
    }

    /// Re-reads the log of the current generation as a mount would, and returns what is
    /// wrong with it: a damaged record with valid records of this generation behind it.
    pub fn verify_log(&self) -> Option<String> {
        let mut j = Journal {
            dev: self.dev.clone(),
            sb: self.sb.clone(),
            sb_lba: self.sb_lba,
            gen: self.gen,
            next_seq: 0,
            tail: self.sb.log_lba,
        };
        match j.scan_log() {
            Ok(_) => None,
            Err(e) => Some(e.to_string()),
        }
    }

    /// Appends one record and makes it durable. Returns `Ok(false)` (writing nothing) when
    /// the log has no room: the caller then writes a checkpoint instead.
    pub fn append(&mut self, payload: &[u8]) -> Result<bool> {
        let ss = self.sb.sector as u64;
        let sectors = self.record_sectors(payload.len() as u64);
        // Keep one sector free so that a stale header never follows the last record.
        if self.tail + sectors >= self.sb.log_lba + self.sb.log_sectors {
            return Ok(false);
        }
        let h = header(&LOG_FRAME, self.gen, self.next_seq, payload, self.sb.fs_id);
        let mut b = Vec::with_capacity((sectors * ss) as usize);
        b.extend_from_slice(&h);
        b.extend_from_slice(payload);
        b.resize((sectors * ss) as usize, 0);
        if self.trailers() {
            let at = b.len() - HDR;
            b[at..].copy_from_slice(&h);
        }
        self.dev.write(self.tail, &b)?;
        self.dev.flush()?;
        self.tail += sectors;
        self.next_seq += 1;
        Ok(true)
    }

    /// Forgets the log's last record (of `payload_len` bytes), which recovery found was never
    /// acknowledged: it maps data that did not reach the media, so its commit's flush never
    /// completed. With `erase`, its sectors are zeroed and flushed, so that no later mount
    /// replays it once new data fills the places it names; the next record takes its place.
    pub fn drop_last_record(&mut self, payload_len: usize, erase: bool) -> Result<()> {
        let sectors = self.record_sectors(payload_len as u64);
        let start = self
            .tail
            .checked_sub(sectors)
            .filter(|&l| l >= self.sb.log_lba);
        let (Some(start), Some(seq)) = (start, self.next_seq.checked_sub(1)) else {
            return Err(FsError::Corrupt(format!(
                "metadata log: no record of {payload_len} bytes ends at LBA {}",
                self.tail
            )));
        };
        if erase {
            let zeros = vec![0u8; (sectors * self.sb.sector as u64) as usize];
            self.dev.write(start, &zeros)?;
            self.dev.flush()?;
        }
        self.tail = start;
        self.next_seq = seq;
        Ok(())
    }

    /// Writes a checkpoint of generation `gen + 1` into the other slot and restarts the log.
    pub fn checkpoint(&mut self, payload: &[u8]) -> Result<()> {
        let ss = self.sb.sector as u64;
        let sectors = (HDR as u64 + payload.len() as u64).div_ceil(ss);
        if sectors > self.sb.slot_sectors {
            return Err(FsError::NoSpace(format!(
                "metadata checkpoint of {} bytes exceeds its slot of {} bytes",
                payload.len(),
                self.sb.slot_sectors * ss
            )));
        }
        let gen = self.gen + 1;
        let slot = if gen.is_multiple_of(2) {
            self.sb.slot0
        } else {
            self.sb.slot1
        };
        let mut b = Vec::with_capacity((sectors * ss) as usize);
        b.extend_from_slice(&header(&CKP_FRAME, gen, 0, payload, self.sb.fs_id));
        b.extend_from_slice(payload);
        b.resize((sectors * ss) as usize, 0);
        self.dev.write(slot, &b)?;
        self.dev.flush()?;
        self.gen = gen;
        self.next_seq = 0;
        self.tail = self.sb.log_lba;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
