//! The write path: batches into the log buffer and the memtable, log bands, group commit,
//! write stalls and the memtable switch.

use super::{is_nospace, Inner, WriteBatch, WriteState, MAX_KEY_LEN};
use crate::error::{Error, Result};
use crate::io::IoKind;
use crate::log;
use crate::memtable::Memtable;
use crate::options::WriteOptions;
use crate::version::SuperVersion;
use parking_lot::MutexGuard;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Inner {
    pub(super) fn write(&self, batch: WriteBatch, wo: WriteOptions) -> Result<()> {
        self.check_writable()?;
        if batch.is_empty() {
            return Ok(());
        }
        if wo.sync && wo.disable_wal {
            return Err(Error::InvalidArgument(
                "a synced write needs the log (sync with disable_wal)".into(),
            ));
        }
        if batch.max_key > MAX_KEY_LEN {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes (limit {MAX_KEY_LEN})",
                batch.max_key
            )));
        }
        let zone_bytes = self.dev.zone_bytes();
        if batch.bytes as u64 + 64 * batch.count as u64 > zone_bytes / 4 {
            return Err(Error::InvalidArgument(format!(
                "batch of {} bytes exceeds a quarter band ({} bytes)",
                batch.bytes,
                zone_bytes / 4
            )));
        }
        let my_seq = self.write_grouped(batch, wo)?;
        if wo.sync {
            if self.has_unlogged() {
                // Unlogged writes before this one are durable only in a band.
                self.flush_memtable()?;
            } else {
                self.sync_to(my_seq)?;
            }
        }
        if !self.opts.background_compaction {
            let needs = {
                let sv = self.current();
                sv.imm.is_some()
            };
            if needs {
                // The write is in; a flush that finds no room reports it at the next write.
                match self.maintain() {
                    Err(e) if !is_nospace(&e) => return Err(e),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Applies one batch of a write group (`db/group.rs`) with the writer lock held: its log
    /// records into the log buffer (chunks written out as the buffer fills), its operations
    /// into the memtable. Returns the batch's last sequence number.
    pub(super) fn apply_batch(
        &self,
        w: &mut WriteState,
        batch: WriteBatch,
        wo: WriteOptions,
    ) -> Result<u64> {
        let seq0 = w.last_seq + 1;
        // The reader view cannot switch memtables while the writer lock is held.
        let sv = self.current();
        if wo.disable_wal {
            sv.mem.mark_unlogged(seq0);
            w.last_unlogged = seq0;
        } else {
            // After an unlogged write that no flush has put in a band yet, the log gets a gap
            // marker (a record of no operations naming it) before the next logged record:
            // recovery replays nothing after a marker whose write is lost, so that the
            // recovered state is always that after a prefix of the writes. The marker names
            // the *latest* unlogged write: memtables reach bands in order, so when it is in
            // a band every earlier one is too, and when it is lost replay must stop here.
            // (Naming the earliest one, still pending in the immutable memtable, let a
            // logged write after a later unlogged one replay although that one was lost once
            // the immutable memtable had been flushed.)
            let pending = [sv.imm.as_deref(), Some(&*sv.mem)]
                .into_iter()
                .flatten()
                .any(|m| m.first_unlogged().is_some());
            let gap = (pending && w.last_unlogged != w.marked_gap).then_some(w.last_unlogged);
            let mut rec_len = log::record_len(seq0, batch.count, batch.rep.as_bytes());
            if let Some(g) = gap {
                rec_len += log::record_len(g, 0, &[]);
            }
            if let Err(e) = self.ensure_log_room(w, rec_len) {
                return self.fail(e);
            }
            if let Some(g) = gap {
                w.buf.append_record(g, 0, &[]);
                w.marked_gap = g;
            }
            w.buf.append_record(seq0, batch.count, batch.rep.as_bytes());
        }
        sv.mem.insert_many(seq0, batch.iter());
        drop(sv);
        w.last_seq += batch.count as u64;
        let my_seq = w.last_seq;
        self.visible_seq.store(my_seq, Ordering::Release);
        let c = &self.counters;
        c.user_bytes
            .fetch_add(batch.bytes as u64, Ordering::Relaxed);
        let dels = (batch.count - batch.puts) as u64;
        c.puts.fetch_add(batch.puts as u64, Ordering::Relaxed);
        if dels > 0 {
            c.deletes.fetch_add(dels, Ordering::Relaxed);
        }
        if w.buf.len() as u64 >= self.opts.log_buffer_bytes {
            if let Err(e) = self.write_out(w) {
                return self.fail(e);
            }
        }
        Ok(my_seq)
    }

    /// Ends a write group: with the log written through, the records of its writes that are
    /// neither synced (a synced write hands its records over in `sync_to`) nor unlogged go to
    /// the device, once for the whole group.
    pub(super) fn finish_group(&self, w: &mut WriteState, hand_off: bool) -> Result<()> {
        if self.log_write_through && hand_off {
            if let Err(e) = self.hand_off_log(w) {
                return self.fail(e);
            }
        }
        Ok(())
    }

    /// Whether a memtable holds writes that are in no log (`WriteOptions::disable_wal`).
    pub(super) fn has_unlogged(&self) -> bool {
        let sv = self.current();
        sv.mem.first_unlogged().is_some()
            || sv
                .imm
                .as_ref()
                .is_some_and(|m| m.first_unlogged().is_some())
    }

    pub(super) fn l0_count(sv: &SuperVersion) -> usize {
        sv.bands.iter().filter(|b| b.level == 0).count()
    }

    pub(super) fn mem_full(&self, w: &WriteState, sv: &SuperVersion) -> bool {
        // Deletes on a full device may grow the memtable to twice its size (tombstones are
        // small) rather than need a new log band before the old memtable is flushed.
        let limit = if self.pressure() {
            self.memtable_limit * 2
        } else {
            self.memtable_limit
        };
        sv.mem.approximate_bytes() >= limit || w.mem_zones.len() > self.opts.max_log_bands as usize
    }

    /// LevelDB's MakeRoomForWrite: slowdown, stop, and memtable rotation.
    pub(super) fn make_room_for_write(&self) -> Result<MutexGuard<'_, WriteState>> {
        let mut slowed = false;
        loop {
            self.check_writable()?;
            let mut w = self.writer.lock();
            // Read what is needed and let the reader view go at once: a view held across
            // the maintenance below kept every band its compactions replaced (their zones
            // stayed pending until the next memtable switch, a fifth of the drive when the
            // inline compactions cascade).
            let (l0, full, has_imm) = {
                let sv = self.current();
                (
                    Self::l0_count(&sv),
                    self.mem_full(&w, &sv),
                    sv.imm.is_some(),
                )
            };
            if !slowed
                && self.opts.background_compaction
                && l0 >= self.opts.l0_slowdown
                && self.opts.slowdown_factor > 0.0
            {
                drop(w);
                let d = Duration::from_secs_f64(self.opts.slowdown_factor / 1000.0);
                std::thread::sleep(d);
                self.counters.slowdowns.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .stall_ns
                    .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
                slowed = true;
                continue;
            }
            if !full {
                return Ok(w);
            }
            if has_imm || (l0 >= self.opts.l0_stop && self.opts.background_compaction) {
                drop(w);
                self.wait_for_background()?;
                continue;
            }
            if let Err(e) = self.rotate(&mut w) {
                return self.fail(e);
            }
            drop(w);
            if self.opts.background_compaction {
                self.kick();
            } else {
                self.maintain()?;
            }
        }
    }

    /// Lets the background thread make progress; fails once the handle is poisoned (the
    /// background thread stops working then, so a waiter would otherwise wait for ever).
    pub(super) fn wait_for_background(&self) -> Result<()> {
        self.check_writable()?;
        let t0 = Instant::now();
        if !self.opts.background_compaction {
            self.maintain()?;
        } else {
            let mut b = self.bg.lock();
            if let Some(e) = b.nospace.take() {
                return Err(Error::NoSpace(e));
            }
            b.work = true;
            self.bg_cv.notify_all();
            self.done_cv.wait_for(&mut b, Duration::from_millis(50));
        }
        self.counters.stalls.fetch_add(1, Ordering::Relaxed);
        self.counters
            .stall_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Makes the mutable memtable immutable and starts a new one with new log bands.
    pub(super) fn rotate(&self, w: &mut WriteState) -> Result<()> {
        self.write_out(w)?;
        {
            let mut ms = self.meta.lock();
            ms.imm_zones = std::mem::take(&mut w.mem_zones);
            // The next commit (the next band's) records where this band's chunks end, as
            // `ensure_log_room` does for a band left full.
            if let Some((z, end)) = self.left_unflushed(w) {
                ms.m.log_ends.insert(z, end);
            }
        }
        w.active = None;
        let mut sv = self.sv.write();
        let mut n = (**sv).clone();
        n.imm = Some(n.mem.clone());
        n.mem = Arc::new(Memtable::for_band(
            self.dev.zone_bytes(),
            self.opts.memtable_point_index,
        ));
        *sv = Arc::new(n);
        Ok(())
    }

    pub(super) fn ensure_log_room(&self, w: &mut WriteState, rec_len: usize) -> Result<()> {
        let ss = self.dev.ss;
        if let Some((_, next)) = w.active {
            if next + log::chunk_sectors(w.buf.len() + rec_len, ss) <= self.dev.zone_sectors {
                return Ok(());
            }
        }
        self.write_out(w)?;
        // Everything in the earlier log bands must be durable before a later band can hold
        // anything, or a crash could keep later records and lose earlier ones; unless the
        // device never makes a write durable without a flush of its zone (zone files: a sync
        // below then flushes the log bands in order), when the full band may stay volatile,
        // and is never written at all if its memtable reaches a band first. Such a device
        // saves a zone's write pointer only at a flush of it, so the manifest that lists the
        // next band records where the full one's chunks end (`Manifest::log_ends`): recovery
        // after a crash of the process follows them past the saved write pointer, and after
        // a power cut that lost some of them stops the log there (nothing synced is among
        // them: a sync flushes every log band).
        let closed = self.left_unflushed(w);
        if !self.dev.dev.durable_only_when_flushed() {
            self.dev.flush(IoKind::Log)?;
        }
        let mut ms = self.meta.lock();
        let z = self.alloc(&mut ms, self.log_keep())?;
        // A device that places zones by what they hold (KVIMR) keeps logs out of harm's way.
        self.dev.dev.hint_zone(z, tegula_device::ZoneHint::Log);
        ms.m.log_zones.push(z);
        if let Some((cz, end)) = closed {
            ms.m.log_ends.insert(cz, end);
        }
        if let Err(e) = self.commit(&mut ms) {
            ms.m.log_zones.pop();
            if let Some((cz, _)) = closed {
                ms.m.log_ends.remove(&cz);
            }
            ms.free.insert(z);
            return Err(e);
        }
        w.active = Some((z, 0));
        w.mem_zones.push(z);
        Ok(())
    }

    /// The active log band and where its chunks end, when moving on from it leaves it
    /// unflushed (a device that saves a zone's write pointer only at its flush): the manifest
    /// records that end (`Manifest::log_ends`).
    fn left_unflushed(&self, w: &WriteState) -> Option<(u32, u64)> {
        w.active
            .filter(|_| self.dev.dev.durable_only_when_flushed())
    }

    pub(super) fn write_out(&self, w: &mut WriteState) -> Result<()> {
        if w.buf.is_empty() {
            return Ok(());
        }
        let Some((z, next)) = w.active else {
            return Err(Error::InvalidArgument(
                "log buffer without a log band".into(),
            ));
        };
        let chunk = w.buf.framed(self.dev.ss);
        let sectors = chunk.len() as u64 / self.dev.ss;
        self.dev.write_at(z, next, chunk, IoKind::Log)?;
        w.active = Some((z, next + sectors));
        w.buf.clear();
        Ok(())
    }

    /// Hands the buffered log records to the device (`Options::log_write_through`): to the
    /// older tail slot when they fit one; else the whole sectors they fill to the log band as
    /// a continued chunk and the rest to the slot (so that a record larger than a sector
    /// costs its bytes in the band, not a padded sector more); else to the band as a chunk.
    pub(super) fn hand_off_log(&self, w: &mut WriteState) -> Result<()> {
        if w.buf.is_empty() {
            return Ok(());
        }
        let (Some(t), Some((zone, mut next))) = (w.tail, w.active) else {
            return self.write_out(w);
        };
        let ss = self.dev.ss;
        if w.buf.len() > log::tail::capacity(ss) {
            let (sectors, rest) = w.buf.whole_sectors(ss);
            // An ordinary chunk unless there is a rest (whole records filling whole sectors
            // need none), it fits a slot, and the chunk that completes it fits this band (the
            // room the buffer's padded chunk would take, which `ensure_log_room` checked).
            if sectors == 0
                || rest == 0
                || rest > log::tail::capacity(ss)
                || next + sectors + 1 > self.dev.zone_sectors
            {
                return self.write_out(w);
            }
            let chunk = w.buf.framed_sectors(ss, sectors);
            self.dev.write_at(zone, next, chunk, IoKind::Log)?;
            w.buf.consume_sectors(ss, sectors);
            next += sectors;
            w.active = Some((zone, next));
        }
        let generation = t.generation + 1;
        let Some(slot) = log::tail::encode(zone, next, generation, w.buf.records(), self.dev.ss)
        else {
            return self.write_out(w);
        };
        let lba = t.lbas[(generation % 2) as usize];
        self.dev.write_lba(lba, &slot, IoKind::LogTail)?;
        w.tail = Some(super::TailSlots { generation, ..t });
        Ok(())
    }

    /// Group commit: the first synced writer to get here writes the buffer and flushes the
    /// device for everyone whose records are in it.
    pub(super) fn sync_to(&self, seq: u64) -> Result<()> {
        if self.durable_seq.load(Ordering::Acquire) >= seq {
            return Ok(());
        }
        let _g = self.sync_lock.lock();
        if self.durable_seq.load(Ordering::Acquire) >= seq {
            self.counters.grouped_syncs.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let target = {
            let mut w = self.writer.lock();
            if let Err(e) = self.write_out(&mut w) {
                return self.fail(e);
            }
            w.last_seq
        };
        // Every live log band, oldest first: a later band's records are durable only after
        // the earlier bands' are.
        let logs = self.meta.lock().m.log_zones.clone();
        if let Err(e) = self.dev.flush_zones(IoKind::Log, &logs) {
            return self.fail(e);
        }
        self.counters.syncs.fetch_add(1, Ordering::Relaxed);
        self.durable_seq.fetch_max(target, Ordering::AcqRel);
        Ok(())
    }

    /// Flushes the memtables if they hold writes that are in no log (close).
    pub(super) fn flush_unlogged(&self) -> Result<()> {
        if self.is_poisoned.load(Ordering::Acquire) || !self.has_unlogged() {
            return Ok(());
        }
        self.flush_memtable()
    }

    pub(super) fn sync_all(&self) -> Result<()> {
        if self.poisoned.lock().is_some() {
            return Ok(());
        }
        let seq = self.writer.lock().last_seq;
        self.sync_to(seq)
    }
}
