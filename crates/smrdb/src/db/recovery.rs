//! Opening a database: superblock, manifest, band footers and log replay (zones written but
//! not recorded are reset).

use super::metacopies;
use super::{BgState, Inner, MetaState, TailSlots, WriteState};
use crate::band::Band;
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::io::{Dev, IoKind};
use crate::log;
use crate::manifest::Manifest;
use crate::memtable::Memtable;
use crate::options::{FormatOptions, Mode, Options};
use crate::stats::Counters;
use crate::superblock::Superblock;
use crate::version::{sort_newest_first, SuperVersion, VBand};
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;
use tegula_device::{DeviceInfo, Zone, ZoneCondition, ZoneFilter, ZonedDevice};

/// The device as the engine sees it, checked before anything is read or written.
struct Layout {
    dev: Arc<Dev>,
    info: DeviceInfo,
    zones: Vec<Zone>,
    seq_zones: Vec<u32>,
    /// Sectors of the conventional area.
    conv_sectors: u64,
    /// Manifest slot size of a new database.
    slot_sectors: u64,
}

impl Layout {
    /// Checks that the device suits SMRDB and that the options are in range.
    fn of(device: Arc<dyn ZonedDevice>, opts: &Options) -> Result<Layout> {
        // A device without conventional zones (ZNS) keeps the superblock and manifest in an
        // emulated one, a log in its first sequential zones.
        let device = tegula_device::ConvZones::wrap_if_needed(device).map_err(Error::Device)?;
        let dev = Arc::new(Dev::new(device));
        let info = dev.dev.info();
        if info.zone_sectors == 0 || info.conventional_zones == 0 {
            return Err(Error::Unsupported("SMRDB needs a zoned device".into()));
        }
        if opts.block_size == 0 || opts.write_chunk_bytes == 0 || opts.l0_compaction_trigger == 0 {
            return Err(Error::InvalidArgument(
                "block_size, write_chunk_bytes and l0_compaction_trigger must be positive".into(),
            ));
        }
        let zones = dev.dev.report_zones(ZoneFilter::All);
        let seq_zones: Vec<u32> = zones
            .iter()
            .filter(|z| z.zone_type.is_sequential())
            .map(|z| z.index)
            .collect();
        if seq_zones.len() < opts.reserve_bands as usize + 4 {
            return Err(Error::Unsupported(format!(
                "{} sequential zones; SMRDB needs at least {}",
                seq_zones.len(),
                opts.reserve_bands + 4
            )));
        }
        let conv_sectors = info.conventional_zones as u64 * info.zone_sectors;
        let slot_sectors = metacopies::slot_sectors_for(conv_sectors);
        if slot_sectors < 2 {
            return Err(Error::Unsupported("conventional area too small".into()));
        }
        Ok(Layout {
            dev,
            info,
            zones,
            seq_zones,
            conv_sectors,
            slot_sectors,
        })
    }

    /// The superblock (copy A at sector 0, else copy B at the area's last sector): `None` on a
    /// device without one; both copies damaged is corruption. Also what is wrong with a copy.
    fn superblock(&self) -> Result<(Option<Superblock>, Vec<String>)> {
        metacopies::read_superblock(&self.dev, self.conv_sectors)
    }

    /// Writes both superblock copies (those the database's slot size leaves room for) and
    /// flushes them.
    fn write_superblock(&self, sb: &Superblock) -> Result<()> {
        let mut b = sb.encode();
        self.dev.pad(&mut b);
        self.dev.dev.write(0, &b).map_err(Error::Device)?;
        if let Some(lba) = metacopies::superblock_copy_b(self.conv_sectors, sb.slot_sectors) {
            self.dev.dev.write(lba, &b).map_err(Error::Device)?;
        }
        self.dev.flush(IoKind::Meta)
    }
}

impl Inner {
    /// Formats a new database on a device that holds none: writes the superblock, then the
    /// first manifest.
    pub(super) fn create(
        device: Arc<dyn ZonedDevice>,
        format: FormatOptions,
        opts: Options,
    ) -> Result<Inner> {
        let l = Layout::of(device, &opts)?;
        if let (Some(sb), _) = l.superblock()? {
            return Err(Error::AlreadyExists { mode: sb.mode });
        }
        if l.zones
            .iter()
            .any(|z| z.zone_type.is_sequential() && z.condition != ZoneCondition::Empty)
        {
            return Err(Error::Unsupported(
                "the device holds data but no SMRDB superblock".into(),
            ));
        }
        let sb = Superblock {
            sector_size: l.dev.ss as u32,
            zone_sectors: l.info.zone_sectors,
            zones: l.info.zones,
            conventional_zones: l.info.conventional_zones,
            slot_sectors: l.slot_sectors,
            mode: format.mode,
        };
        l.write_superblock(&sb)?;
        // Tail slots a former database left behind must never be taken for this one's.
        if let Some(lbas) = metacopies::tail_slots(l.conv_sectors, l.slot_sectors) {
            let zero = vec![0u8; l.dev.ss as usize];
            for lba in lbas {
                l.dev.write_lba(lba, &zero, IoKind::Meta)?;
            }
            l.dev.flush(IoKind::Meta)?;
        }
        let inner = Self::recover(l, format.mode, Manifest::default(), opts)?;
        {
            let mut ms = inner.meta.lock();
            ms.m.next_band_id = 1;
            inner.commit(&mut ms)?;
        }
        Ok(inner)
    }

    /// Opens the database on the device with the organisation its superblock records.
    pub(super) fn open(device: Arc<dyn ZonedDevice>, opts: Options) -> Result<Inner> {
        let l = Layout::of(device, &opts)?;
        let (sb, sb_notes) = l.superblock()?;
        let Some(sb) = sb else {
            return Err(Error::NotFound(
                "sector 0 holds no SMRDB superblock (create the database first)".into(),
            ));
        };
        if sb.sector_size as u64 != l.dev.ss
            || sb.zone_sectors != l.info.zone_sectors
            || sb.zones != l.info.zones
            || sb.conventional_zones != l.info.conventional_zones
        {
            return Err(Error::Unsupported(format!(
                "database was laid out for another geometry: {sb:?}"
            )));
        }
        let (m, version, manifest_notes) = metacopies::load_manifest(&l.dev, sb.slot_sectors)?;
        // Every damaged copy is rewritten from its good twin (the same content: a repair,
        // never a rollback) before anything else is written; what was done is reported.
        let mut repaired = Vec::new();
        if !sb_notes.is_empty() {
            l.write_superblock(&sb)?;
            for n in sb_notes {
                tracing::warn!("smrdb: {n}; rewrote the superblock copies");
                repaired.push(format!("{n}; rewrote the superblock copies"));
            }
        }
        if !manifest_notes.is_empty() {
            metacopies::write_manifest_copies(&l.dev, &m, sb.slot_sectors)?;
            l.dev.flush(IoKind::Meta)?;
            for n in manifest_notes {
                tracing::warn!("smrdb: {n}; rewrote both copies of its slot");
                repaired.push(format!("{n}; rewrote both copies of its slot"));
            }
        }
        // The manifest slots (and the tail slots after them) are where the superblock says,
        // whatever size a new database would get.
        let l = Layout {
            slot_sectors: sb.slot_sectors,
            ..l
        };
        let mut inner = Self::recover(l, sb.mode, m, opts)?;
        inner.repaired_at_open.splice(0..0, repaired);
        if version < 3 {
            // Log bands written by an engine before manifest version 3 hold "SLOG" chunks
            // only: never append version 2 chunks to one (the next log band is new, and
            // starting it records a current manifest, which older engines refuse).
            inner.writer.get_mut().active = None;
        }
        Ok(inner)
    }

    /// Builds the engine state from manifest `m`: opens its bands, resets zones written but
    /// not recorded, and replays the log bands into a memtable.
    fn recover(l: Layout, mode: Mode, m: Manifest, opts: Options) -> Result<Inner> {
        let Layout {
            dev,
            zones,
            seq_zones,
            slot_sectors,
            conv_sectors,
            ..
        } = l;
        let zone_bytes = dev.zone_bytes();
        // The bands data can take: the sequential zones, and on a thin-provisioned device no
        // more than its free media holds plus the bands already in use.
        let bands = match dev.space() {
            None => seq_zones.len(),
            Some(s) => {
                let in_use = m.bands.len() + m.log_zones.len();
                let media = usize::try_from(s.full_zones(dev.zone_sectors)).unwrap_or(usize::MAX);
                seq_zones.len().min(media.saturating_add(in_use))
            }
        };
        let opts = opts.fitted_to_bands(bands);
        // A memtable fills one band less a 1/32 margin (at least 64 KiB): the band writer
        // keeps room for twice the block index (each entry a block's first and last key and
        // 24 bytes: with 4 KiB values and 16-byte keys, one entry per value, 2.7% of the
        // data) plus the Bloom filter and footer. With a 1/64 margin such a flush spilled a
        // few entries into a second band, doubling the L0 bands and the compactions behind
        // them (paper figure 9: SOC 40 device s instead of 26; tests/band_fill.rs).
        let memtable_limit = opts
            .memtable_bytes
            .unwrap_or(zone_bytes - (zone_bytes / 32).max(64 << 10).min(zone_bytes / 2))
            .max(4096);
        // Open bands.
        let mut bands = Vec::with_capacity(m.bands.len());
        let mut used: BTreeSet<u32> = BTreeSet::new();
        for meta in &m.bands {
            if !used.insert(meta.zone) {
                return Err(Error::corruption(
                    meta.zone,
                    0,
                    "zone used twice in manifest",
                ));
            }
            let level = meta.level;
            let band = Band::open(&dev, meta.clone())?;
            bands.push(VBand {
                level,
                band: Arc::new(band),
            });
        }
        for z in &m.log_zones {
            if !used.insert(*z) {
                return Err(Error::corruption(*z, 0, "log zone used twice in manifest"));
            }
        }
        sort_newest_first(&mut bands);
        // Replay the log.
        let mem = Arc::new(Memtable::for_band(
            dev.zone_bytes(),
            opts.memtable_point_index,
        ));
        let mut last_seq = m.flushed_seq;
        for b in &bands {
            last_seq = last_seq.max(b.band.meta.max_seq);
        }
        let mut active = None;
        let mut gap = None;
        // Where a log band closed without a flush (`Manifest::log_ends`) lost chunks past its
        // saved write pointer: the log ends there.
        let mut cut: Option<String> = None;
        // The last sequence number of the records replayed so far (the records past a saved
        // write pointer must continue it: an earlier use of the band left older ones).
        let chain_last = std::cell::Cell::new(0u64);
        let mut visit = |r: log::Record<'_>| -> bool {
            if r.count == 0 {
                // A gap marker: the write `first_seq` was not logged. Unless a flush put it
                // in a band, it is lost, and so is everything logged after it (replaying
                // those would not give the state after a prefix of the writes).
                if r.first_seq > m.flushed_seq {
                    gap = Some(r.first_seq);
                    return false;
                }
                return true;
            }
            chain_last.set(r.first_seq + r.count - 1);
            for (j, (k, v)) in r.ops().enumerate() {
                let s = r.first_seq + j as u64;
                if s > m.flushed_seq {
                    mem.insert(k, s, v);
                    last_seq = last_seq.max(s);
                }
            }
            true
        };
        // The start of a record that the last log band's last continued chunk began and no
        // chunk completed: a tail slot may hold its rest.
        let mut tail_carry = Vec::new();
        for (i, &z) in m.log_zones.iter().enumerate() {
            let zi = dev.dev.zone(z).map_err(Error::Device)?;
            let wp = zi.written_sectors();
            let mut end = log::replay_zone(&dev, z, wp, &mut visit)?;
            if end.stopped {
                break;
            }
            let mut carry = std::mem::take(&mut end.carry);
            if end.torn {
                tracing::info!(
                    "smrdb recovery: log band {z} ends in a chunk torn by a power cut at \
                     sector {}",
                    end.end_sector
                );
            }
            let closed_at = m.log_ends.get(&z).copied();
            if let Some(closed) = closed_at.filter(|&c| c > end.end_sector) {
                // Chunks written past the saved write pointer before the engine moved on.
                let beyond = if end.torn || end.end_sector != wp {
                    None
                } else {
                    log::chunks_beyond_write_pointer(&dev, z, wp, closed)?
                };
                let mut whole = beyond.is_some();
                let mut stopped = false;
                // The chunks past the write pointer complete the record the band's replay
                // carried over, if any; they must end at a record's end.
                let log_bytes = [
                    &std::mem::take(&mut carry)[..],
                    beyond.as_deref().unwrap_or_default(),
                ]
                .concat();
                for r in log::records(&log_bytes) {
                    match r {
                        Ok(r) if r.count == 0 || r.first_seq > chain_last.get() => {
                            if !visit(r) {
                                stopped = true;
                                break;
                            }
                        }
                        _ => {
                            whole = false;
                            break;
                        }
                    }
                }
                if stopped {
                    break;
                }
                if !whole {
                    let later = m.log_zones.len() - i - 1;
                    cut = Some(format!(
                        "log band {z}: its chunks from sector {} (its saved write pointer {wp}) \
                         to sector {closed}, where the engine moved on from it without a \
                         flush, are not all there (a power cut before a sync); the log ends \
                         there and its {later} later log band(s) are not replayed",
                        end.end_sector
                    ));
                    break;
                }
            }
            if !carry.is_empty() {
                if i + 1 < m.log_zones.len() {
                    // The engine completes a continued chunk's record in the same band before
                    // it moves on to another.
                    return Err(Error::corruption(
                        z,
                        end.end_sector * dev.ss,
                        format!(
                            "log band {z} ends inside a record (of {} bytes so far, at sector \
                             {}), but later log bands follow",
                            carry.len(),
                            end.end_sector
                        ),
                    ));
                }
                tail_carry = carry;
            }
            if i + 1 == m.log_zones.len()
                && closed_at.is_none()
                && !end.torn
                && end.end_sector == wp
                && wp < dev.zone_sectors
            {
                // A clean tail: keep appending here.
                active = Some((z, wp));
            }
        }
        if let Some(c) = &cut {
            tracing::warn!("smrdb recovery: {c}");
        }
        // The records a crash of the process left only in a tail slot continue the log. They
        // are not durable yet: `durable_seq` stays below them, so that a sync writes them.
        let durable_seq = last_seq;
        let mut buf = log::LogBuffer::default();
        let mut dangling = !tail_carry.is_empty();
        let mut tail_notes = Vec::new();
        let tail = match metacopies::tail_slots(conv_sectors, slot_sectors) {
            None => None,
            Some(lbas) => {
                let at = if gap.is_none() && cut.is_none() {
                    active
                } else {
                    None
                };
                let t = recover_tail(&dev, lbas, at, &tail_carry, m.flushed_seq, last_seq)?;
                dangling &= !t.continues_carry;
                for n in &t.notes {
                    tracing::warn!("smrdb recovery: {n}");
                }
                tail_notes = t.notes;
                for r in &t.records {
                    if r.count == 0 {
                        gap = Some(r.first_seq);
                        break;
                    }
                    for (j, (k, v)) in log::OpIter::new(&r.ops).enumerate() {
                        let s = r.first_seq + j as u64;
                        mem.insert(k, s, v);
                        last_seq = last_seq.max(s);
                    }
                }
                buf.append_raw(&t.log);
                if gap.is_some() {
                    // As for a marker in a log band: what came before it is in the memtable,
                    // which `Db::open` puts in a band.
                    buf.clear();
                } else if !buf.is_empty() {
                    tracing::info!(
                        "smrdb recovery: {} bytes of log records from tail slot (generation {}) \
                         continue the log",
                        buf.len(),
                        t.generation
                    );
                }
                Some(TailSlots {
                    lbas,
                    generation: t.generation,
                })
            }
        };
        // Every other zone is free; reset what a crash left behind (only now: an open that finds
        // corruption above leaves the device as it found it).
        let mut free = BTreeSet::new();
        for z in &zones {
            if !z.zone_type.is_sequential() || used.contains(&z.index) {
                continue;
            }
            match z.condition {
                ZoneCondition::Empty => {
                    free.insert(z.index);
                }
                ZoneCondition::ReadOnly | ZoneCondition::Offline => {}
                _ => {
                    dev.reset(z.index)?;
                    free.insert(z.index);
                }
            }
        }
        if dangling {
            // The rest of the record went nowhere: the write was never acknowledged (its tail
            // slot is written before it returns). Nothing may be appended behind its start, so
            // the log starts over.
            tracing::info!(
                "smrdb recovery: the log ends inside a record that a crash cut short ({} \
                 bytes); that write was never acknowledged",
                tail_carry.len()
            );
            active = None;
        }
        let cut_log = cut.is_some() || dangling;
        if let Some(c) = cut {
            tail_notes.push(c);
            active = None;
        }
        if let Some(g) = gap {
            tracing::info!(
                "smrdb recovery: write {g} was not logged and not flushed; \
                 the log after it is discarded"
            );
            // The records after the marker stay in these log bands: never append behind
            // them. `Db::open` flushes what was replayed and drops the bands.
            active = None;
        }
        let mem_zones = m.log_zones.clone();
        let sv = SuperVersion {
            mem,
            imm: None,
            bands: Arc::new(bands),
        };
        let inner = Inner {
            dev: dev.clone(),
            memtable_limit,
            log_write_through: opts
                .log_write_through
                .unwrap_or_else(|| dev.dev.host_page_cache()),
            seq_zones,
            sv: RwLock::new(Arc::new(sv)),
            writer: Mutex::new(WriteState {
                last_seq,
                buf,
                active,
                mem_zones,
                marked_gap: 0,
                last_unlogged: 0,
                tail,
            }),
            flush_lock: Mutex::new(()),
            compaction_reserve: AtomicUsize::new(0),
            writers: Default::default(),
            sync_lock: Mutex::new(()),
            durable_seq: AtomicU64::new(durable_seq),
            visible_seq: AtomicU64::new(last_seq),
            meta: Mutex::new(MetaState {
                m,
                free,
                pending: Vec::new(),
                imm_zones: Vec::new(),
                slot_sectors,
            }),
            maint: Mutex::new(()),
            cache: Arc::new(if opts.block_cache_second_miss {
                BlockCache::with_second_miss_admission(opts.block_cache_bytes)
            } else {
                BlockCache::new(opts.block_cache_bytes)
            }),
            snapshots: Arc::new(Mutex::new(BTreeMap::new())),
            bg: Mutex::new(BgState::default()),
            bg_cv: Condvar::new(),
            done_cv: Condvar::new(),
            poisoned: Mutex::new(None),
            is_poisoned: AtomicBool::new(false),
            delete_pressure: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            retired: Mutex::new(Vec::new()),
            restart_log: gap.is_some() || cut_log,
            repaired_at_open: tail_notes,
            counters: Counters::default(),
            mode,
            opts,
        };
        Ok(inner)
    }
}

/// A batch record recovered from a tail slot (owned: the slot's sector is read into a buffer
/// that does not outlive [`recover_tail`]).
#[derive(Debug)]
struct TailRecord {
    first_seq: u64,
    count: u64,
    ops: Vec<u8>,
}

/// What the tail slots hold for recovery: the newest generation written (the next write
/// takes the one after it) and the records to replay.
#[derive(Debug, Default)]
struct RecoveredTail {
    generation: u64,
    records: Vec<TailRecord>,
    /// The log bytes after the replayed log's end (chunks past the saved write pointer and the
    /// slot's payload), for the log buffer: they may begin with the rest of a record.
    log: Vec<u8>,
    /// A slot completed the record the replayed log ended inside.
    continues_carry: bool,
    /// What is wrong with a slot that was passed over.
    notes: Vec<String>,
}

/// Reads both tail slots and picks the records that continue the replayed log, which ends at
/// `log_end` (the last log band and the sector after its last chunk, which is its saved write
/// pointer; `None` when the log may not be continued). The newest valid slot wins that names
/// that place, or a later sector of that band reached by whole chunks written past the saved
/// write pointer by a process that crashed before the device saved it
/// ([`log::chunks_beyond_write_pointer`]: a banded file or zone files), and whose every record
/// continues the sequence numbers (above `last_seq` and increasing: records of a slot or
/// chunk left from an earlier use of the band are older; gap markers above `flushed_seq` are
/// kept for the caller). `carry` is the start of a record the replayed log ended inside: the
/// slot's chain must complete it. A damaged slot is reported and passed over: its write never
/// completed (a power cut), or the sector is damaged; no synced write relies on a slot.
fn recover_tail(
    dev: &Dev,
    lbas: [u64; 2],
    log_end: Option<(u32, u64)>,
    carry: &[u8],
    flushed_seq: u64,
    last_seq: u64,
) -> Result<RecoveredTail> {
    let mut out = RecoveredTail::default();
    let mut slots = Vec::new();
    for lba in lbas {
        let b = dev.read_lba(lba, 1)?;
        match log::tail::decode(&b) {
            Ok(None) => {}
            Ok(Some(t)) => {
                out.generation = out.generation.max(t.generation);
                slots.push((t.generation, t.zone, t.sector, t.payload.to_vec(), lba));
            }
            Err(e) => out.notes.push(format!(
                "log tail slot at LBA {lba} is damaged (a write a power cut tore, or damage); \
                 not used: {e}"
            )),
        }
    }
    slots.sort_by_key(|s| std::cmp::Reverse(s.0));
    let Some((zone, end)) = log_end else {
        return Ok(out);
    };
    for (generation, z, sector, payload, lba) in slots {
        if z != zone {
            continue;
        }
        if sector < end {
            // The log went on past this slot, and an older slot is older still.
            break;
        }
        if sector > dev.zone_sectors {
            // Not a place the log can reach: damage the checksum missed, or not ours.
            out.notes.push(format!(
                "log tail slot at LBA {lba} (generation {generation}) names sector {sector} of \
                 log band {zone}, past its end ({} sectors); not used",
                dev.zone_sectors
            ));
            continue;
        }
        let Some(mut log) = log::chunks_beyond_write_pointer(dev, zone, end, sector)? else {
            continue;
        };
        log.extend_from_slice(&payload);
        let bytes = [carry, &log[..]].concat();
        let mut records = Vec::new();
        let mut last = last_seq;
        let mut continues = true;
        for r in log::records(&bytes) {
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    out.notes.push(format!(
                        "log tail slot at LBA {lba} (generation {generation}) holds a \
                         malformed record; not used: {e}"
                    ));
                    continues = false;
                    break;
                }
            };
            if r.count == 0 {
                if r.first_seq > flushed_seq {
                    records.push(TailRecord {
                        first_seq: r.first_seq,
                        count: 0,
                        ops: Vec::new(),
                    });
                }
                continue;
            }
            if r.first_seq <= last {
                continues = false;
                break;
            }
            last = r.first_seq + r.count - 1;
            records.push(TailRecord {
                first_seq: r.first_seq,
                count: r.count,
                ops: r.ops.to_vec(),
            });
        }
        if continues {
            out.records = records;
            out.continues_carry = !carry.is_empty();
            out.log = log;
            break;
        }
    }
    Ok(out)
}
