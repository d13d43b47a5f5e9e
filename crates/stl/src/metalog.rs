//! The metadata log of a translation layer (specified in `docs/formats/dm-smr-image.md`): two
//! slots, each a checkpoint frame followed by record frames of the same generation. Records
//! are appended as they commit; when the records outgrow the checkpoint, a new checkpoint of
//! the next generation goes to the other slot (so a torn checkpoint leaves the old slot whole).
//! Every frame carries magic, version, kind, generation, length and a CRC-32C; loading stops
//! at the first frame that fails any check (a torn tail), and never panics on bad bytes.

use crate::error::{Result, StlError};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use tegula_codec::frame::{Format, Header, CHECKSUM_LEN};

/// Magic of every metadata frame.
pub const FRAME_MAGIC: [u8; 4] = *b"TGLM";
/// Current frame format version.
pub const FRAME_VERSION: u8 = 1;
/// Frame kind: a checkpoint of the whole layer state.
pub const KIND_CHECKPOINT: u8 = 1;
/// Frame kind: one committed record.
pub const KIND_RECORD: u8 = 2;
/// The metadata frame: a record frame (magic, version, kind, generation, length, CRC-32C).
pub const FRAME_FORMAT: Format = Format::record(
    "frame",
    &FRAME_MAGIC,
    FRAME_VERSION,
    &[KIND_CHECKPOINT, KIND_RECORD],
);
/// Bytes of a frame before its payload.
pub const FRAME_HEADER: usize = FRAME_FORMAT.header_len();
/// Records are compacted into a new checkpoint once they exceed this many bytes and the size
/// of the last checkpoint.
const COMPACT_MIN: u64 = 1 << 20;

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// [`KIND_CHECKPOINT`] or [`KIND_RECORD`].
    pub kind: u8,
    /// Generation: the checkpoint's, shared by the records after it.
    pub gen: u64,
    /// Payload bytes.
    pub len: u32,
}

impl From<Header> for FrameHeader {
    fn from(h: Header) -> Self {
        FrameHeader {
            kind: h.kind,
            gen: h.seq,
            len: h.len,
        }
    }
}

/// Encodes one frame: header, payload, CRC-32C over both.
pub fn encode_frame(kind: u8, gen: u64, payload: &[u8]) -> Vec<u8> {
    FRAME_FORMAT.encode(kind, gen, payload)
}

/// Decodes a frame header (no checksum yet: the payload is needed for that).
pub fn decode_frame_header(b: &[u8]) -> std::result::Result<FrameHeader, String> {
    Ok(FRAME_FORMAT
        .decode_header(b)
        .map_err(|e| e.to_string())?
        .into())
}

/// Decodes a whole frame from `b` (which may hold more bytes after it): returns the header,
/// the payload and the frame's total length.
pub fn decode_frame(b: &[u8]) -> std::result::Result<(FrameHeader, &[u8], usize), String> {
    let f = FRAME_FORMAT.decode(b).map_err(|e| e.to_string())?;
    Ok((f.header.into(), f.payload, f.total))
}

/// Where the two slots live.
pub(crate) trait MetaBackend: Send {
    /// Reads `buf.len()` bytes at `off` of slot `slot` (past what was written: zeros).
    fn read_at(&mut self, slot: usize, off: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Writes `data` at `off` of slot `slot`.
    fn write_at(&mut self, slot: usize, off: u64, data: &[u8]) -> io::Result<()>;
    /// Makes everything written durable on the host.
    fn sync(&mut self) -> io::Result<()>;
}

/// Slots in memory (drives without an image).
#[derive(Default)]
pub(crate) struct MemMeta {
    slots: [Vec<u8>; 2],
}

impl MetaBackend for MemMeta {
    fn read_at(&mut self, slot: usize, off: u64, buf: &mut [u8]) -> io::Result<()> {
        let s = &self.slots[slot & 1];
        buf.fill(0);
        let off = off as usize;
        if off < s.len() {
            let n = (s.len() - off).min(buf.len());
            buf[..n].copy_from_slice(&s[off..off + n]);
        }
        Ok(())
    }

    fn write_at(&mut self, slot: usize, off: u64, data: &[u8]) -> io::Result<()> {
        let s = &mut self.slots[slot & 1];
        let off = off as usize;
        if off == 0 {
            // A checkpoint: whatever followed it is of an older generation; drop it to bound
            // memory.
            s.clear();
        }
        if s.len() < off + data.len() {
            s.resize(off + data.len(), 0);
        }
        s[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Slots in a region of a drive image.
pub(crate) struct FileMeta {
    file: File,
    base: u64,
    slot_size: u64,
}

impl FileMeta {
    /// Slot 0 at `base`, slot 1 at `base + slot_size`.
    pub fn new(file: File, base: u64, slot_size: u64) -> Self {
        FileMeta {
            file,
            base,
            slot_size,
        }
    }
}

impl MetaBackend for FileMeta {
    fn read_at(&mut self, slot: usize, off: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut done = 0;
        let at = self.base + (slot as u64 & 1) * self.slot_size + off;
        while done < buf.len() {
            let n = self.file.read_at(&mut buf[done..], at + done as u64)?;
            if n == 0 {
                buf[done..].fill(0);
                break;
            }
            done += n;
        }
        Ok(())
    }

    fn write_at(&mut self, slot: usize, off: u64, data: &[u8]) -> io::Result<()> {
        let at = self.base + (slot as u64 & 1) * self.slot_size + off;
        self.file.write_all_at(data, at)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}

/// What [`MetaLog::load`] found.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The checkpoint payload.
    pub checkpoint: Vec<u8>,
    /// Record payloads after it, in commit order.
    pub records: Vec<Vec<u8>>,
}

/// What one metadata slot holds (for `tegula disk dump`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlotScan {
    /// Generation and frame bytes of its checkpoint; `None` when it holds no valid one.
    pub checkpoint: Option<(u64, u64)>,
    /// Valid records of that generation after it.
    pub records: u64,
    /// Their bytes.
    pub record_bytes: u64,
}

/// The log over a backend.
pub(crate) struct MetaLog {
    backend: Box<dyn MetaBackend>,
    slot_size: u64,
    cur: usize,
    gen: u64,
    write_off: u64,
    ckpt_len: u64,
    rec_bytes: u64,
    fresh: bool,
}

fn io_err(what: &str, e: io::Error) -> StlError {
    StlError::Meta(format!("{what}: {e}"))
}

impl MetaLog {
    /// A log over `backend` with slots of `slot_size` bytes; `fresh` when nothing was ever
    /// written (a new drive), so the first checkpoint must be written rather than loaded.
    pub fn new(backend: Box<dyn MetaBackend>, slot_size: u64, fresh: bool) -> Self {
        MetaLog {
            backend,
            slot_size,
            cur: 0,
            gen: 0,
            write_off: 0,
            ckpt_len: 0,
            rec_bytes: 0,
            fresh,
        }
    }

    /// An in-memory log.
    pub fn in_memory() -> Self {
        Self::new(Box::new(MemMeta::default()), u64::MAX / 4, true)
    }

    /// Whether no checkpoint was ever written.
    pub fn is_fresh(&self) -> bool {
        self.fresh
    }

    /// Generation of the current checkpoint.
    pub fn generation(&self) -> u64 {
        self.gen
    }

    /// Writes `payload` as the checkpoint of the next generation into the other slot (the
    /// first one into slot 0) and syncs it; records then follow it there.
    pub fn write_checkpoint(&mut self, payload: &[u8]) -> Result<()> {
        let (slot, gen) = if self.fresh {
            (0, 1)
        } else {
            (1 - self.cur, self.gen + 1)
        };
        let f = encode_frame(KIND_CHECKPOINT, gen, payload);
        if f.len() as u64 > self.slot_size {
            return Err(StlError::Meta(format!(
                "a checkpoint of {} bytes does not fit the {}-byte metadata slot",
                f.len(),
                self.slot_size
            )));
        }
        self.backend
            .write_at(slot, 0, &f)
            .map_err(|e| io_err("writing a metadata checkpoint", e))?;
        // A record that might follow must not be mistaken for one of this generation: the
        // bytes after the checkpoint are from an older generation or zero.
        self.backend
            .sync()
            .map_err(|e| io_err("syncing a metadata checkpoint", e))?;
        self.cur = slot;
        self.gen = gen;
        self.write_off = f.len() as u64;
        self.ckpt_len = f.len() as u64;
        self.rec_bytes = 0;
        self.fresh = false;
        Ok(())
    }

    /// Whether a record of `len` payload bytes still fits the current slot.
    pub fn fits(&self, len: usize) -> bool {
        self.write_off + FRAME_FORMAT.frame_len(len) as u64 <= self.slot_size
    }

    /// Whether the records have grown past the checkpoint (time to compact).
    pub fn wants_compaction(&self) -> bool {
        self.rec_bytes > self.ckpt_len.max(COMPACT_MIN)
    }

    /// Appends one record frame. The caller checks [`Self::fits`] first.
    pub fn append(&mut self, payload: &[u8]) -> Result<()> {
        let f = encode_frame(KIND_RECORD, self.gen, payload);
        if self.write_off + f.len() as u64 > self.slot_size {
            return Err(StlError::Meta(format!(
                "metadata slot of {} bytes is full",
                self.slot_size
            )));
        }
        self.backend
            .write_at(self.cur, self.write_off, &f)
            .map_err(|e| io_err("appending a metadata record", e))?;
        self.write_off += f.len() as u64;
        self.rec_bytes += f.len() as u64;
        Ok(())
    }

    /// Makes the log durable on the host.
    pub fn sync(&mut self) -> Result<()> {
        self.backend
            .sync()
            .map_err(|e| io_err("syncing the metadata log", e))
    }

    fn read_frame(&mut self, slot: usize, off: u64, buf: &mut Vec<u8>) -> Option<FrameHeader> {
        if off + FRAME_FORMAT.frame_len(0) as u64 > self.slot_size {
            return None;
        }
        let mut hb = [0u8; FRAME_HEADER];
        self.backend.read_at(slot, off, &mut hb).ok()?;
        let h = FRAME_FORMAT.decode_header(&hb).ok()?;
        let total = FRAME_FORMAT.frame_len(h.len as usize) as u64;
        if off + total > self.slot_size {
            return None;
        }
        buf.resize(total as usize, 0);
        self.backend.read_at(slot, off, buf).ok()?;
        let f = FRAME_FORMAT.decode(buf).ok()?;
        Some(f.header.into())
    }

    /// Describes slot `slot`: its checkpoint (generation, frame bytes) and the records of that
    /// generation after it (count, bytes).
    pub fn scan(&mut self, slot: usize) -> SlotScan {
        let mut buf = Vec::new();
        let Some(h) = self.read_frame(slot, 0, &mut buf) else {
            return SlotScan::default();
        };
        if h.kind != KIND_CHECKPOINT {
            return SlotScan::default();
        }
        let mut scan = SlotScan {
            checkpoint: Some((h.gen, buf.len() as u64)),
            ..Default::default()
        };
        let mut off = buf.len() as u64;
        while let Some(r) = self.read_frame(slot, off, &mut buf) {
            if r.kind != KIND_RECORD || r.gen != h.gen {
                break;
            }
            scan.records += 1;
            scan.record_bytes += buf.len() as u64;
            off += buf.len() as u64;
        }
        scan
    }

    /// Finds the newest valid checkpoint and the records of its generation after it; positions
    /// the log to append after the last valid record.
    pub fn load(&mut self) -> Result<Loaded> {
        let mut best: Option<(usize, u64, Vec<u8>)> = None;
        let mut buf = Vec::new();
        for slot in 0..2 {
            if let Some(h) = self.read_frame(slot, 0, &mut buf) {
                if h.kind == KIND_CHECKPOINT && best.as_ref().is_none_or(|b| h.gen > b.1) {
                    best = Some((slot, h.gen, buf.clone()));
                }
            }
        }
        let Some((slot, gen, frame)) = best else {
            return Err(StlError::Corrupt(
                "no valid metadata checkpoint in either slot".into(),
            ));
        };
        let checkpoint = frame[FRAME_HEADER..frame.len() - CHECKSUM_LEN].to_vec();
        let mut off = frame.len() as u64;
        let ckpt_len = off;
        let mut records = Vec::new();
        while let Some(h) = self.read_frame(slot, off, &mut buf) {
            if h.kind != KIND_RECORD || h.gen != gen {
                break;
            }
            records.push(buf[FRAME_HEADER..buf.len() - CHECKSUM_LEN].to_vec());
            off += buf.len() as u64;
        }
        self.cur = slot;
        self.gen = gen;
        self.write_off = off;
        self.ckpt_len = ckpt_len;
        self.rec_bytes = off - ckpt_len;
        self.fresh = false;
        Ok(Loaded {
            checkpoint,
            records,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_detect_every_flipped_byte() {
        let f = encode_frame(KIND_RECORD, 7, b"hello");
        let (h, p, n) = decode_frame(&f).expect("decode");
        assert_eq!(
            (h.kind, h.gen, p, n),
            (KIND_RECORD, 7, &b"hello"[..], f.len())
        );
        for i in 0..f.len() {
            let mut bad = f.clone();
            bad[i] ^= 0x10;
            assert!(decode_frame(&bad).is_err(), "flip at {i} not detected");
        }
        for n in 0..f.len() {
            assert!(decode_frame(&f[..n]).is_err());
        }
    }

    #[test]
    fn a_torn_tail_ends_replay_and_a_torn_checkpoint_falls_back() {
        let mut log = MetaLog::in_memory();
        log.write_checkpoint(b"c1").expect("ckpt");
        log.append(b"r1").expect("append");
        log.append(b"r2").expect("append");
        // A new checkpoint in slot 1, then tear it: slot 0 still holds c1 + r1 + r2.
        log.write_checkpoint(b"c2").expect("ckpt");
        log.backend.write_at(1, 10, &[0xff]).expect("tear");
        let got = log.load().expect("load");
        assert_eq!(got.checkpoint, b"c1");
        assert_eq!(got.records, vec![b"r1".to_vec(), b"r2".to_vec()]);
        // Tear the last record: replay stops before it, appends continue there.
        let off = log.write_off - 3;
        log.backend.write_at(0, off, &[0, 0, 0]).expect("tear");
        let got = log.load().expect("load");
        assert_eq!(got.records, vec![b"r1".to_vec()]);
        log.append(b"r3").expect("append");
        let got = log.load().expect("load");
        assert_eq!(got.records, vec![b"r1".to_vec(), b"r3".to_vec()]);
    }

    /// On-disk compatibility: frames as the build before the shared codec encoded them.
    #[test]
    fn frame_bytes_match_those_written_by_earlier_builds() {
        let rec = "54474c4d0102000007000000000000000500000068656c6c6f2ce3fc3c";
        let ckpt = "54474c4d010100000100000000000000000000003b46ba4e";
        let hex = |b: Vec<u8>| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        assert_eq!(hex(encode_frame(KIND_RECORD, 7, b"hello")), rec);
        assert_eq!(hex(encode_frame(KIND_CHECKPOINT, 1, b"")), ckpt);
    }
}
