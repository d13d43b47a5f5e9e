//! [`MetaLog`]: loading the newest whole generation, appending records, moving to the
//! other slot with a new checkpoint, and scanning slots for `disk dump` and `disk check`.

use super::*;

/// What [`MetaLog::load`] found.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The checkpoint's frame version and payload.
    pub checkpoint: (u8, Vec<u8>),
    /// Record frame versions and payloads after it, in commit order.
    pub records: Vec<(u8, Vec<u8>)>,
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
    notes: Vec<Finding>,
    /// A damaged last record recovered from its tail copy by `load`: (slot, offset, frame),
    /// written back before the next record (never by a read-only `load`).
    repair: Option<(usize, u64, Vec<u8>)>,
}

pub(super) fn io_err(what: &'static str, source: io::Error) -> StlError {
    StlError::MetaIo { what, source }
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
            notes: Vec::new(),
            repair: None,
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

    /// What the last [`Self::load`] noticed that did not stop it (a damaged checkpoint of the
    /// other slot passed over, a torn tail), worded for a person.
    pub fn notes(&self) -> &[Finding] {
        &self.notes
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
        // Records follow only a synced checkpoint: a record of a generation proves its
        // checkpoint was complete (the loader relies on it to tell a torn checkpoint from a
        // corrupted one).
        self.backend
            .sync()
            .map_err(|e| io_err("syncing a metadata checkpoint", e))?;
        // A recovered record of the old slot is superseded by this checkpoint.
        self.repair = None;
        // Seal the old slot: its records end here, and generation `gen` is complete.
        let seal = encode_frame(KIND_SEAL, self.gen, &gen.to_le_bytes());
        if !self.fresh && self.write_off + seal.len() as u64 <= self.slot_size {
            self.backend
                .write_at(self.cur, self.write_off, &seal)
                .map_err(|e| io_err("sealing the old metadata slot", e))?;
        }
        self.cur = slot;
        self.gen = gen;
        self.write_off = f.len() as u64;
        self.ckpt_len = f.len() as u64;
        self.rec_bytes = 0;
        self.fresh = false;
        Ok(())
    }

    /// Whether a record of `len` payload bytes may be appended to the current slot (it fits,
    /// and is no larger than [`MAX_RECORD_PAYLOAD`]).
    pub fn fits(&self, len: usize) -> bool {
        len <= MAX_RECORD_PAYLOAD
            && self.write_off + 2 * FRAME_FORMAT.frame_len(len) as u64 <= self.slot_size
    }

    /// Whether the records have grown past the checkpoint (time to compact).
    pub fn wants_compaction(&self) -> bool {
        self.rec_bytes > self.ckpt_len.max(COMPACT_MIN)
    }

    /// Appends one record frame. The caller checks [`Self::fits`] first.
    pub fn append(&mut self, payload: &[u8]) -> Result<()> {
        if !self.fits(payload.len()) {
            return Err(StlError::Meta(format!(
                "a record of {} bytes does not fit the {}-byte metadata slot",
                payload.len(),
                self.slot_size
            )));
        }
        if let Some((slot, off, frame)) = self.repair.take() {
            self.backend
                .write_at(slot, off, &frame)
                .map_err(|e| io_err("rewriting a recovered metadata record", e))?;
        }
        let f = encode_frame(KIND_RECORD, self.gen, payload);
        // The record, then its tail copy right after it (the next record goes over the copy).
        let mut both = f.clone();
        both.extend_from_slice(&encode_frame(KIND_TAIL_COPY, self.gen, payload));
        self.backend
            .write_at(self.cur, self.write_off, &both)
            .map_err(|e| io_err("appending a metadata record", e))?;
        self.write_off += f.len() as u64;
        self.rec_bytes += f.len() as u64;
        Ok(())
    }

    /// Writes back and syncs a damaged last record that [`Self::load`] recovered from its
    /// tail copy; whether there was one. (Otherwise the next append writes it back.)
    pub fn write_repair(&mut self) -> Result<bool> {
        let Some((slot, off, frame)) = self.repair.take() else {
            return Ok(false);
        };
        self.backend
            .write_at(slot, off, &frame)
            .map_err(|e| io_err("rewriting a recovered metadata record", e))?;
        self.sync()?;
        Ok(true)
    }

    /// Makes the log durable on the host.
    pub fn sync(&mut self) -> Result<()> {
        self.backend
            .sync()
            .map_err(|e| io_err("syncing the metadata log", e))
    }

    /// Reads and checks the frame at `off` of `slot` into `buf`; `None` when it fails any
    /// check (see [`Self::why_bad`]).
    fn read_frame(&mut self, slot: usize, off: u64, buf: &mut Vec<u8>) -> Option<FrameHeader> {
        if off + FRAME_FORMAT.frame_len(0) as u64 > self.slot_size {
            return None;
        }
        let mut hb = [0u8; FRAME_HEADER];
        self.backend.read_at(slot, off, &mut hb).ok()?;
        let h = decode_frame_header(&hb).ok()?;
        if h.kind == KIND_RECORD && h.len as usize > MAX_RECORD_PAYLOAD {
            return None;
        }
        let total = FRAME_FORMAT.frame_len(h.len as usize) as u64;
        if off + total > self.slot_size {
            return None;
        }
        // A damaged length must not make an in-memory log allocate far past what it holds.
        if self
            .backend
            .exact_end(slot)
            .is_some_and(|end| off + total > end)
        {
            return None;
        }
        buf.resize(total as usize, 0);
        self.backend.read_at(slot, off, buf).ok()?;
        decode_frame(buf).ok().map(|(h, _, _)| h)
    }

    /// Why the frame at `off` of `slot` is not the next frame of generation `gen` (for
    /// messages).
    fn why_bad(&mut self, slot: usize, off: u64, gen: u64) -> String {
        if off + FRAME_FORMAT.frame_len(0) as u64 > self.slot_size {
            return "the slot ends".into();
        }
        let mut hb = [0u8; FRAME_HEADER];
        if let Err(e) = self.backend.read_at(slot, off, &mut hb) {
            return format!("unreadable: {e}");
        }
        if hb.iter().all(|&b| b == 0) {
            return "zero bytes (never written)".into();
        }
        let h = match decode_frame_header(&hb) {
            Ok(h) => h,
            Err(e) => return e.to_string(),
        };
        if h.kind == KIND_RECORD && h.len as usize > MAX_RECORD_PAYLOAD {
            return format!("its length {} exceeds the largest record", h.len);
        }
        let total = FRAME_FORMAT.frame_len(h.len as usize) as u64;
        if off + total > self.slot_size
            || self
                .backend
                .exact_end(slot)
                .is_some_and(|end| off + total > end)
        {
            return format!("its length {} runs past the slot", h.len);
        }
        let mut buf = vec![0u8; total as usize];
        if let Err(e) = self.backend.read_at(slot, off, &mut buf) {
            return format!("unreadable: {e}");
        }
        match decode_frame(&buf) {
            Err(e) => e.to_string(),
            Ok((h, _, _)) if h.gen != gen => format!("a frame of generation {}", h.gen),
            Ok((h, _, _)) => format!("a frame of kind {}", h.kind),
        }
    }

    /// The payload of a valid tail copy of generation `gen` that starts exactly one frame of
    /// its own length after `off`: the copy of a record written whole at `off`.
    fn tail_copy_after(&mut self, slot: usize, off: u64, gen: u64) -> Option<Vec<u8>> {
        let to = self
            .record_limit(off)
            .min(self.backend.written_end(slot).unwrap_or(u64::MAX));
        let mut chunk = vec![0u8; SCAN_CHUNK + FRAME_MAGIC.len()];
        let mut frame = Vec::new();
        let mut base = off + 1;
        while base < to {
            let n = ((to - base) as usize + FRAME_MAGIC.len() - 1).min(chunk.len());
            self.backend.read_at(slot, base, &mut chunk[..n]).ok()?;
            let hits: Vec<u64> = chunk[..n]
                .windows(FRAME_MAGIC.len())
                .enumerate()
                .filter(|(_, w)| *w == FRAME_MAGIC)
                .map(|(i, _)| base + i as u64)
                .filter(|&at| at < to)
                .collect();
            for at in hits {
                if let Some(h) = self.read_frame(slot, at, &mut frame) {
                    if h.kind == KIND_TAIL_COPY && h.gen == gen && at == off + frame.len() as u64 {
                        return Some(frame[FRAME_HEADER..frame.len() - CHECKSUM_LEN].to_vec());
                    }
                }
            }
            base += SCAN_CHUNK as u64;
        }
        None
    }

    /// The first offset in `[from, to)` of `slot` holding a valid record frame of generation
    /// `gen`, found by searching for the frame magic.
    fn find_record(&mut self, slot: usize, from: u64, to: u64, gen: u64) -> Option<u64> {
        let to = to
            .min(self.slot_size)
            .min(self.backend.written_end(slot).unwrap_or(u64::MAX));
        let mut chunk = vec![0u8; SCAN_CHUNK + FRAME_MAGIC.len()];
        let mut frame = Vec::new();
        let mut base = from;
        while base < to {
            let n = ((to - base) as usize + FRAME_MAGIC.len() - 1).min(chunk.len());
            if self.backend.read_at(slot, base, &mut chunk[..n]).is_err() {
                return None;
            }
            let hits: Vec<u64> = chunk[..n]
                .windows(FRAME_MAGIC.len())
                .enumerate()
                .filter(|(_, w)| *w == FRAME_MAGIC)
                .map(|(i, _)| base + i as u64)
                .filter(|&at| at < to)
                .collect();
            for at in hits {
                if let Some(h) = self.read_frame(slot, at, &mut frame) {
                    if h.kind == KIND_RECORD && h.gen == gen {
                        return Some(at);
                    }
                }
            }
            base += SCAN_CHUNK as u64;
        }
        None
    }

    /// Where the records of a generation whose checkpoint frame is `ckpt_len` bytes can end at
    /// most: compaction starts a new checkpoint once they outgrow it (and 1 MiB), and no record
    /// is larger than [`MAX_RECORD_PAYLOAD`].
    fn record_limit(&self, ckpt_len: u64) -> u64 {
        ckpt_len
            .saturating_add(ckpt_len.max(COMPACT_MIN))
            .saturating_add(FRAME_FORMAT.frame_len(MAX_RECORD_PAYLOAD) as u64)
            .min(self.slot_size)
    }

    fn corrupt(&self, slot: usize, offset: u64, problem: String) -> StlError {
        StlError::LogCorrupt {
            slot,
            offset,
            image_offset: self.backend.image_offset(slot, offset),
            problem,
        }
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

    /// A damaged checkpoint in the slot not chosen is a torn checkpoint write (a crash while
    /// the next generation was being written) only if no record of that next generation
    /// follows it: records are appended only after their checkpoint was synced.
    ///
    /// `sealed` is the offset of a seal in the chosen slot naming the next generation: then
    /// that checkpoint was synced, and anything but it in the other slot is corruption.
    fn check_other_slot(
        &mut self,
        other: usize,
        chosen_gen: u64,
        sealed: Option<u64>,
    ) -> Result<()> {
        let next = chosen_gen + 1;
        if let Some(at) = sealed {
            let why = self.why_bad(other, 0, next);
            return Err(self.corrupt(
                other,
                0,
                format!(
                    "the checkpoint of generation {next} is damaged ({why}), yet the seal at \
                     byte {at} of slot {} proves it was written and synced",
                    1 - other
                ),
            ));
        }
        let mut hb = [0u8; FRAME_HEADER];
        if self.backend.read_at(other, 0, &mut hb).is_err() || hb.iter().all(|&b| b == 0) {
            return Ok(());
        }
        let mut buf = Vec::new();
        if let Some(h) = self.read_frame(other, 0, &mut buf) {
            if h.kind == KIND_CHECKPOINT && h.gen < chosen_gen {
                return Ok(());
            }
        }
        let why = self.why_bad(other, 0, chosen_gen);
        let claimed = decode_frame_header(&hb).ok();
        let (from, to) = match claimed {
            Some(h) if FRAME_FORMAT.frame_len(h.len as usize) as u64 <= self.slot_size => {
                let end = FRAME_FORMAT.frame_len(h.len as usize) as u64;
                (end, self.record_limit(end))
            }
            // The length is unreadable: search the whole slot.
            _ => (1, self.slot_size),
        };
        if let Some(at) = self.find_record(other, from, to, next) {
            return Err(self.corrupt(
                other,
                0,
                format!(
                    "the checkpoint of generation {next} is damaged ({why}), yet a record of that \
                     generation follows it at byte {at}: the checkpoint was complete"
                ),
            ));
        }
        self.notes.push(Finding::new(
            Severity::Warning,
            match claimed {
                Some(h) if h.gen == next => format!(
                "metadata slot {other}: the checkpoint of generation {next} is damaged ({why}) \
                 and no record follows it: a checkpoint write torn by a crash, ignored; using \
                 generation {chosen_gen}"
            ),
                _ => format!(
                    "metadata slot {other}: damaged checkpoint ({why}) ignored; using generation \
                 {chosen_gen}"
                ),
            },
        ));
        Ok(())
    }

    /// Finds the newest valid checkpoint and the records of its generation after it; positions
    /// the log to append after the last valid record. A damaged frame followed by a valid
    /// record of its generation is [`StlError::LogCorrupt`]; only a damaged tail with nothing
    /// valid after it is taken for a torn write.
    pub fn load(&mut self) -> Result<Loaded> {
        self.notes.clear();
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
        let checkpoint = (
            format_of(&frame).0,
            frame[FRAME_HEADER..frame.len() - CHECKSUM_LEN].to_vec(),
        );
        let ckpt_len = frame.len() as u64;
        let mut off = ckpt_len;
        let mut records = Vec::new();
        while let Some(h) = self.read_frame(slot, off, &mut buf) {
            if h.kind != KIND_RECORD || h.gen != gen {
                break;
            }
            records.push((
                h.version,
                buf[FRAME_HEADER..buf.len() - CHECKSUM_LEN].to_vec(),
            ));
            off += buf.len() as u64;
        }
        // The frame at `off` is not a record of this generation. A valid tail copy there is
        // the last record's (already read). A tail copy right after a damaged frame of its own
        // length proves that frame was a record written whole: recover it from the copy.
        // A seal there ends the slot's records: the next generation was written.
        let mut copy_here = false;
        let mut sealed = None;
        if let Some(h) = self.read_frame(slot, off, &mut buf) {
            copy_here = h.kind == KIND_TAIL_COPY && h.gen == gen;
            if h.kind == KIND_SEAL
                && h.gen == gen
                && buf[FRAME_HEADER..buf.len() - CHECKSUM_LEN] == (gen + 1).to_le_bytes()
            {
                sealed = Some(off);
                copy_here = true;
            }
        }
        if !copy_here {
            if let Some(payload) = self.tail_copy_after(slot, off, gen) {
                let frame = encode_frame(KIND_RECORD, gen, &payload);
                let why = self.why_bad(slot, off, gen);
                self.notes.push(Finding::new(
                    Severity::Warning,
                    format!(
                        "metadata slot {slot}: record {} of generation {gen} at byte {off} is \
                         damaged ({}); recovered from its tail copy (a writable open rewrites \
                         it)",
                        records.len(),
                        why
                    ),
                ));
                off += frame.len() as u64;
                self.repair = Some((slot, off - frame.len() as u64, frame));
                records.push((FRAME_VERSION, payload));
                copy_here = true;
            }
        }
        let limit = self.record_limit(ckpt_len);
        if let Some(at) = self
            .find_record(slot, off + 1, limit, gen)
            .filter(|_| !copy_here)
        {
            let why = self.why_bad(slot, off, gen);
            return Err(self.corrupt(
                slot,
                off,
                format!(
                    "the frame after record {} of generation {gen} is damaged ({why}), yet a \
                     valid record of that generation follows at byte {at}: corruption, not a \
                     torn tail",
                    records.len()
                ),
            ));
        }
        let mut hb = [0u8; FRAME_HEADER];
        let tail_written = !copy_here
            && off + (FRAME_HEADER as u64) <= self.slot_size
            && self.backend.read_at(slot, off, &mut hb).is_ok()
            && hb.iter().any(|&b| b != 0);
        if tail_written {
            let why = self.why_bad(slot, off, gen);
            if !why.starts_with("a frame of generation") {
                self.notes.push(Finding::new(
                    Severity::Note,
                    format!(
                        "metadata slot {slot}: the log ends at byte {off} after {} records of \
                         generation {gen}; the bytes there ({why}) are a write torn by a crash, \
                         and the next record is written over them",
                        records.len()
                    ),
                ));
            }
        }
        self.check_other_slot(1 - slot, gen, sealed)?;
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

    fn payloads(l: &Loaded) -> Vec<Vec<u8>> {
        l.records.iter().map(|r| r.1.clone()).collect()
    }

    #[test]
    fn a_torn_tail_ends_replay_and_a_torn_checkpoint_falls_back() {
        let mut log = MetaLog::in_memory();
        log.write_checkpoint(b"c1").expect("ckpt");
        log.append(b"r1").expect("append");
        log.append(b"r2").expect("append");
        // A new checkpoint in slot 1 that a crash tore (the seal after it in slot 0 was never
        // written): slot 0 still holds c1 + r1 + r2.
        let sealed_at = log.write_off;
        log.write_checkpoint(b"c2").expect("ckpt");
        log.backend.write_at(1, 10, &[0xff]).expect("tear");
        // Sealed, the damaged checkpoint is corruption.
        match log.load() {
            Err(StlError::LogCorrupt {
                slot: 1,
                offset: 0,
                problem,
                ..
            }) => assert!(problem.contains("seal"), "{problem}"),
            other => panic!("{other:?}"),
        }
        let seal_len = FRAME_FORMAT.frame_len(8);
        log.backend
            .write_at(0, sealed_at, &vec![0; seal_len])
            .expect("unseal");
        let got = log.load().expect("load");
        assert_eq!(got.checkpoint, (FRAME_VERSION, b"c1".to_vec()));
        assert_eq!(payloads(&got), vec![b"r1".to_vec(), b"r2".to_vec()]);
        assert!(
            log.notes().iter().any(|n| n.message.contains("ignored")),
            "{:?}",
            log.notes()
        );
        // Tear the last record (its end and the tail copy after it never reached the media):
        // replay stops before it, appends continue there.
        let off = log.write_off - 3;
        let copy_len = FRAME_FORMAT.frame_len(b"r2".len());
        log.backend
            .write_at(0, off, &vec![0; 3 + copy_len])
            .expect("tear");
        let got = log.load().expect("load");
        assert_eq!(payloads(&got), vec![b"r1".to_vec()]);
        log.append(b"r3").expect("append");
        let got = log.load().expect("load");
        assert_eq!(payloads(&got), vec![b"r1".to_vec(), b"r3".to_vec()]);
    }

    /// A log of a checkpoint and four records; returns it and the offsets of the records.
    fn four_records() -> (MetaLog, Vec<u64>) {
        let mut log = MetaLog::in_memory();
        log.write_checkpoint(b"checkpoint").expect("ckpt");
        let mut offs = Vec::new();
        for r in [&b"first"[..], b"second", b"third", b"fourth"] {
            offs.push(log.write_off);
            log.append(r).expect("append");
        }
        (log, offs)
    }

    #[test]
    fn a_flipped_byte_in_a_record_followed_by_valid_ones_is_corruption_not_a_torn_tail() {
        let (mut log, offs) = four_records();
        // Every byte of the second record: header (magic, version, kind, generation, length),
        // payload and checksum.
        for i in 0..FRAME_FORMAT.frame_len(b"second".len()) as u64 {
            let (mut log2, _) = four_records();
            let mut b = [0u8];
            log2.backend.read_at(0, offs[1] + i, &mut b).expect("read");
            log2.backend
                .write_at(0, offs[1] + i, &[b[0] ^ 0x20])
                .expect("flip");
            match log2.load() {
                Err(StlError::LogCorrupt {
                    slot: 0, offset, ..
                }) => assert_eq!(offset, offs[1], "flip at byte {i}"),
                other => panic!("flip at byte {i} of the second record: {other:?}"),
            }
        }
        // The same flip in the last record, written whole (its tail copy follows it), is
        // recovered from the copy, reported, and written back before the next record.
        log.backend.write_at(0, offs[3] + 22, b"X").expect("flip");
        let got = log
            .load()
            .expect("a damaged last record with its copy is recovered");
        assert_eq!(payloads(&got).last(), Some(&b"fourth".to_vec()));
        assert_eq!(got.records.len(), 4);
        assert!(
            log.notes()
                .iter()
                .any(|n| n.severity == Severity::Warning && n.message.contains("tail copy")),
            "{:?}",
            log.notes()
        );
        log.append(b"fifth").expect("append");
        let got = log.load().expect("load after the repair");
        assert_eq!(
            payloads(&got),
            vec![
                b"first".to_vec(),
                b"second".to_vec(),
                b"third".to_vec(),
                b"fourth".to_vec(),
                b"fifth".to_vec()
            ]
        );
        assert!(!log.notes().iter().any(|n| n.message.contains("tail copy")));
    }

    #[test]
    fn every_flip_in_the_last_record_or_its_copy_loses_nothing_and_none_is_silent() {
        let (log, offs) = four_records();
        let end = log.write_off + FRAME_FORMAT.frame_len(b"fourth".len()) as u64;
        let mut flips = 0;
        for at in offs[3]..end {
            let (mut log2, _) = four_records();
            let mut b = [0u8];
            log2.backend.read_at(0, at, &mut b).expect("read");
            log2.backend.write_at(0, at, &[b[0] ^ 0x04]).expect("flip");
            let got = log2
                .load()
                .unwrap_or_else(|e| panic!("flip at byte {at}: {e}"));
            assert_eq!(got.records.len(), 4, "flip at byte {at}");
            assert_eq!(payloads(&got)[3], b"fourth".to_vec(), "flip at byte {at}");
            if at < log.write_off {
                assert!(
                    log2.notes().iter().any(|n| n.message.contains("tail copy")),
                    "flip at byte {at}: {:?}",
                    log2.notes()
                );
            }
            flips += 1;
        }
        assert_eq!(flips, 2 * FRAME_FORMAT.frame_len(b"fourth".len()));
    }

    #[test]
    fn a_damaged_checkpoint_with_records_of_its_generation_after_it_is_corruption() {
        let mut log = MetaLog::in_memory();
        log.write_checkpoint(b"c1").expect("ckpt");
        log.append(b"r1").expect("append");
        log.write_checkpoint(b"c2").expect("ckpt");
        log.append(b"r2").expect("append");
        log.backend.write_at(1, 21, b"X").expect("flip");
        match log.load() {
            Err(StlError::LogCorrupt {
                slot: 1,
                offset: 0,
                problem,
                ..
            }) => {
                assert!(problem.contains("generation 2"), "{problem}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn frames_of_version_1_are_still_read() {
        let mut log = MetaLog::in_memory();
        let c = FRAME_FORMAT_V1.encode(KIND_CHECKPOINT, 1, b"old");
        let r = FRAME_FORMAT_V1.encode(KIND_RECORD, 1, b"rec");
        log.backend.write_at(0, 0, &c).expect("write");
        log.backend.write_at(0, c.len() as u64, &r).expect("write");
        let got = log.load().expect("load");
        assert_eq!(got.checkpoint, (FRAME_VERSION_V1, b"old".to_vec()));
        assert_eq!(got.records, vec![(FRAME_VERSION_V1, b"rec".to_vec())]);
    }

    /// On-disk compatibility: frames as the build before the shared codec encoded them.
    #[test]
    fn frame_bytes_match_those_written_by_earlier_builds() {
        let rec = "54474c4d0102000007000000000000000500000068656c6c6f2ce3fc3c";
        let ckpt = "54474c4d010100000100000000000000000000003b46ba4e";
        let hex = |b: Vec<u8>| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        assert_eq!(hex(FRAME_FORMAT_V1.encode(KIND_RECORD, 7, b"hello")), rec);
        assert_eq!(hex(FRAME_FORMAT_V1.encode(KIND_CHECKPOINT, 1, b"")), ckpt);
        // Version 2 differs only in the version byte (and so the checksum).
        let v2 = encode_frame(KIND_RECORD, 7, b"hello");
        assert_eq!(v2[4], FRAME_VERSION);
        assert_eq!(hex(v2[5..25].to_vec()), rec[10..50]);
    }
}
