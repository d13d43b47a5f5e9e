//! Mounting: mkfs, mount (newest checkpoint, log replay, zone recovery) and the clean
//! unmount.

use super::{now_ns, Fs, FsOptions};
use crate::buffer::Spares;
use crate::error::{FsError, Result};
use crate::journal::Journal;
use crate::pool::Pool;
use crate::state::{Op, State};
use std::collections::HashMap;
use std::sync::Arc;
use tegula_codec::Dec;
use tegula_device::{ZoneAction, ZoneTarget, ZonedDevice};

impl Fs {
    /// Creates a file system on `dev`: resets every sequential zone and writes the superblock
    /// and an empty root.
    pub fn mkfs(dev: Arc<dyn ZonedDevice>, opts: FsOptions) -> Result<Fs> {
        if !dev.info().stores_data {
            return Err(FsError::NotFs("the device keeps no data".into()));
        }
        // Every zone, the log of an emulated conventional zone included (a device without
        // conventional zones keeps the metadata there: `tegula_device::ConvZones`).
        dev.zone_action(ZoneAction::Reset, ZoneTarget::All)?;
        let dev = tegula_device::ConvZones::wrap_if_needed(dev)?;
        let info = dev.info();
        let mut state = State::new(info.zones as usize, now_ns());
        state.placement = opts.placement.unwrap_or_default();
        let fs_id = (now_ns() as u64) ^ ((std::process::id() as u64) << 32) ^ 0x7e9a_1a5f;
        Journal::format(
            dev.clone(),
            opts.back_pointers as u32,
            fs_id,
            &state.encode(),
        )?;
        Self::open(dev, opts)
    }

    /// Mounts the file system on `dev`: newest checkpoint, log replay, zone recovery; inodes
    /// left without names (unlinked while open before a crash) are freed.
    pub fn open(dev: Arc<dyn ZonedDevice>, mut opts: FsOptions) -> Result<Fs> {
        let dev = tegula_device::ConvZones::wrap_if_needed(dev)?;
        let rec = Journal::open(dev.clone())?;
        let corrupt = |what: String| {
            tracing::error!("{what}");
            FsError::Corrupt(what)
        };
        let mut state = State::decode(&rec.checkpoint)
            .map_err(|e| corrupt(format!("checkpoint (conventional zone 0): {e}")))?;
        let mut journal = rec.journal;
        let mut records = rec.records;
        let sb = journal.superblock().clone();
        opts.back_pointers = sb.back_pointers as u16;
        let pool = Pool::open(dev.clone(), sb.first_seq_zone, opts.back_pointers)?;
        let mut dropped_unacknowledged = false;
        if let Some(last) = records.last() {
            if let Some(why) = unwritten_extent(&pool, last) {
                tracing::warn!(
                    "metadata log record {} was never acknowledged: it maps {why}, so the \
                     power was lost before its commit's flush completed; it is dropped",
                    records.len() - 1
                );
                journal.drop_last_record(last.len(), !opts.read_only)?;
                records.pop();
                dropped_unacknowledged = true;
            }
        }
        for (i, r) in records.iter().enumerate() {
            let mut d = Dec::new(r);
            while d.remaining() > 0 {
                let op = Op::decode(&mut d).map_err(|e| corrupt(format!("log record {i}: {e}")))?;
                state
                    .apply(&op)
                    .map_err(|e| corrupt(format!("log record {i}: {e}")))?;
            }
        }
        let placement = opts.placement.unwrap_or(state.placement);
        // Segments of at most a file buffer's size rounded up to a power of two (their
        // capacity grows by doubling), and room for four of them as spares.
        let segment_max = opts.buffer_bytes.next_power_of_two();
        let spares = Spares::new(4 * segment_max, segment_max);
        let mut fs = Fs {
            dev,
            journal,
            state,
            pending: Vec::new(),
            pending_bytes: 0,
            pool: Arc::new(pool),
            files: HashMap::new(),
            dirty: 0,
            opts,
            broken: None,
            placement,
            streams: HashMap::new(),
            leased: Default::default(),
            job: None,
            flush_queue: Vec::new(),
            spares,
            out_of_space: Default::default(),
            bad_zones: Vec::new(),
            cleanings: 0,
            tail_cleanings: 0,
            user_bytes: 0,
            moved_bytes: 0,
            reclaimed_bytes: 0,
            dropped_unacknowledged,
            cookies: Default::default(),
            lookups: Default::default(),
        };
        if fs.opts.read_only {
            fs.broken = Some("mounted read-only".into());
            return Ok(fs);
        }
        fs.free_orphans()?;
        fs.commit()?;
        Ok(fs)
    }

    /// Frees the inodes no name refers to (after a crash, or held until the unmount).
    fn free_orphans(&mut self) -> Result<()> {
        for ino in self.state.orphans() {
            self.log(Op::Free { ino })?;
        }
        Ok(())
    }

    /// Writes every buffer, commits, checkpoints: the clean unmount.
    pub fn close(mut self) -> Result<()> {
        self.sync_all()?;
        // Nothing holds an inode past the unmount: free the unlinked ones the kernel still
        // held (or that were open) so the image has no orphans.
        if self.broken.is_none() {
            self.free_orphans()?;
        }
        self.checkpoint()?;
        self.dev.flush()?;
        Ok(())
    }
}

/// Where the log record `record` maps file data that never reached the media (an extent
/// ending past its zone's write pointer), if anywhere. Every record but the last was followed
/// by a completed flush (the next is written only after it), so only the last can map such
/// data, and only when its commit was cut before its flush completed: it was never
/// acknowledged. An extent below the write pointer that fails its checksum is damage, not
/// this, and reads report it. A record that does not decode is left to replay to report.
fn unwritten_extent(pool: &Pool, record: &[u8]) -> Option<String> {
    let mut d = Dec::new(record);
    while d.remaining() > 0 {
        let Ok(op) = Op::decode(&mut d) else {
            return None;
        };
        if let Op::Map { ino, piece, .. } = op {
            let end = piece
                .ext_lba
                .saturating_add(pool.extent_sectors(piece.ext_len));
            let wp = pool.write_pointer(piece.zone)?;
            if end > wp {
                return Some(format!(
                    "data of inode {ino} in zone {} up to LBA {end}, past the zone's write \
                     pointer {wp}",
                    piece.zone
                ));
            }
        }
    }
    None
}
