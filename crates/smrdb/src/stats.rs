//! Statistics: counters kept by the engine and the [`DbStats`] snapshot built from them.

use crate::compaction::overlap_pairs;
use crate::db::Inner;
use crate::options::Mode;
use crate::version::{level_of, SuperVersion};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};

/// Engine counters (the I/O counters live with the device wrapper).
#[derive(Debug, Default)]
pub struct Counters {
    /// Key and value bytes written by the user.
    pub user_bytes: AtomicU64,
    /// Puts.
    pub puts: AtomicU64,
    /// Deletes.
    pub deletes: AtomicU64,
    /// GETs.
    pub gets: AtomicU64,
    /// Bands whose blocks a GET read (after the Bloom filter).
    pub get_probes: AtomicU64,
    /// Bands skipped by their Bloom filter.
    pub bloom_skips: AtomicU64,
    /// Scans started.
    pub scans: AtomicU64,
    /// Memtable flushes.
    pub flushes: AtomicU64,
    /// Of those, flushes a background compaction let go first at one of its band boundaries.
    pub flushes_in_compaction: AtomicU64,
    /// Compactions that copied data.
    pub compactions: AtomicU64,
    /// Of those, compactions that ran checkpointed for lack of room for all their outputs
    /// (thin-provisioned devices near full).
    pub low_space_compactions: AtomicU64,
    /// Checkpoints of low-space compactions (outputs recorded, consumed inputs freed).
    pub checkpoints: AtomicU64,
    /// Trivial moves.
    pub trivial_moves: AtomicU64,
    /// Wall time spent in compactions.
    pub compaction_wall_ns: AtomicU64,
    /// Writes delayed by the slowdown.
    pub slowdowns: AtomicU64,
    /// Writes that waited for a flush or compaction.
    pub stalls: AtomicU64,
    /// Wall time writers spent delayed or waiting.
    pub stall_ns: AtomicU64,
    /// Device flushes made for synced writes.
    pub syncs: AtomicU64,
    /// Synced writes that found their records already durable (group commit).
    pub grouped_syncs: AtomicU64,
    /// Flushes the flush thread made while a compaction ran.
    pub flushes_beside_compaction: AtomicU64,
    /// Writer groups applied (one log hand-off each; `db/group.rs`).
    pub write_groups: AtomicU64,
    /// Writes applied by another writer, as part of its group.
    pub grouped_writes: AtomicU64,
}

/// A statistics snapshot (`serde::Serialize`).
#[derive(Debug, Clone, Serialize)]
pub struct DbStats {
    /// Organisation.
    pub mode: String,
    /// Key and value bytes written by the user.
    pub user_bytes: u64,
    /// Puts.
    pub puts: u64,
    /// Deletes.
    pub deletes: u64,
    /// GETs.
    pub gets: u64,
    /// Bytes written to log bands (with chunk headers and sector padding).
    pub log_bytes: u64,
    /// Bytes written to the log tail slots (`Options::log_write_through`: one sector per
    /// write whose records are not yet in a log band).
    pub log_tail_bytes: u64,
    /// Bytes written by memtable flushes.
    pub flush_bytes: u64,
    /// Bytes read by compactions.
    pub compaction_bytes_read: u64,
    /// Bytes written by compactions.
    pub compaction_bytes_written: u64,
    /// Bytes written to the conventional area (superblock, manifest).
    pub manifest_bytes: u64,
    /// (log + log tail + flush + compaction + manifest bytes written) / user bytes.
    pub write_amplification: f64,
    /// (flush + compaction bytes written) / user bytes, the paper's measure (log excluded).
    pub write_amplification_no_log: f64,
    /// Modelled device time of compaction I/O.
    pub compaction_time_ns: u64,
    /// Modelled device time of flush I/O.
    pub flush_time_ns: u64,
    /// Modelled device time of log I/O.
    pub log_time_ns: u64,
    /// Wall time spent compacting.
    pub compaction_wall_ns: u64,
    /// Memtable flushes.
    pub flushes: u64,
    /// Of those, flushes a background compaction let go first at one of its band boundaries
    /// (so that writers did not wait for the whole compaction).
    pub flushes_in_compaction: u64,
    /// Compactions that copied data.
    pub compactions: u64,
    /// Of those, compactions run checkpointed for lack of room (thin-provisioned devices).
    pub low_space_compactions: u64,
    /// Checkpoints of those compactions.
    pub checkpoints: u64,
    /// Trivial moves.
    pub trivial_moves: u64,
    /// Bands per level.
    pub bands_per_level: Vec<usize>,
    /// Data bytes per level.
    pub bytes_per_level: Vec<u64>,
    /// Bands whose blocks a GET read, on average.
    pub avg_bands_probed_per_get: f64,
    /// Bands skipped by Bloom filters.
    pub bloom_skips: u64,
    /// Pairs of bands with overlapping key ranges within levels ≥ 1.
    pub overlap_count: usize,
    /// Free bands.
    pub free_bands: usize,
    /// Log bands in use.
    pub log_bands: usize,
    /// Bytes in the memtables.
    pub memtable_bytes: u64,
    /// Bytes of memory the memtables' point indexes take (`Options::memtable_point_index`),
    /// beyond `memtable_bytes`.
    pub memtable_index_bytes: u64,
    /// Writes delayed by the slowdown.
    pub slowdowns: u64,
    /// Writes that waited for background work.
    pub stalls: u64,
    /// Wall time writers waited.
    pub stall_ns: u64,
    /// Device flushes for synced writes.
    pub syncs: u64,
    /// Synced writes served by another writer's flush.
    pub grouped_syncs: u64,
    /// Flushes the flush thread (`Options::flush_during_compaction`) made while a compaction
    /// ran, without waiting for one of its band boundaries.
    pub flushes_beside_compaction: u64,
    /// Writer groups applied: concurrent writes gathered behind the first, one log hand-off
    /// each (group commit).
    pub write_groups: u64,
    /// Writes applied by another writer as part of its group.
    pub grouped_writes: u64,
    /// Last sequence number.
    pub last_sequence: u64,
}

pub(crate) fn collect(db: &Inner, sv: &SuperVersion, free: usize, log_bands: usize) -> DbStats {
    let c = &db.counters;
    let io = &db.dev().counters;
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let user = g(&c.user_bytes);
    let levels = match db.mode() {
        Mode::Soc => 2,
        Mode::Loc => crate::compaction::loc::LEVELS as usize,
    };
    let mut bands_per_level = vec![0usize; levels];
    let mut bytes_per_level = vec![0u64; levels];
    for b in sv.bands.iter() {
        let l = b.level as usize;
        if l >= bands_per_level.len() {
            bands_per_level.resize(l + 1, 0);
            bytes_per_level.resize(l + 1, 0);
        }
        bands_per_level[l] += 1;
        bytes_per_level[l] += b.band.meta.data_bytes;
    }
    let overlap_count = (1..bands_per_level.len() as u8)
        .map(|l| overlap_pairs(&level_of(&sv.bands, l)))
        .sum();
    let written =
        g(&io.log_bytes) + g(&io.log_tail_bytes) + g(&io.flush_bytes) + g(&io.compaction_written);
    let ratio = |x: u64| {
        if user == 0 {
            0.0
        } else {
            x as f64 / user as f64
        }
    };
    let gets = g(&c.gets);
    DbStats {
        mode: format!("{:?}", db.mode()).to_lowercase(),
        user_bytes: user,
        puts: g(&c.puts),
        deletes: g(&c.deletes),
        gets,
        log_bytes: g(&io.log_bytes),
        log_tail_bytes: g(&io.log_tail_bytes),
        flush_bytes: g(&io.flush_bytes),
        compaction_bytes_read: g(&io.compaction_read),
        compaction_bytes_written: g(&io.compaction_written),
        manifest_bytes: g(&io.meta_bytes),
        write_amplification: ratio(written + g(&io.meta_bytes)),
        write_amplification_no_log: ratio(g(&io.flush_bytes) + g(&io.compaction_written)),
        compaction_time_ns: g(&io.compaction_ns),
        flush_time_ns: g(&io.flush_ns),
        log_time_ns: g(&io.log_ns),
        compaction_wall_ns: g(&c.compaction_wall_ns),
        flushes: g(&c.flushes),
        flushes_in_compaction: g(&c.flushes_in_compaction),
        compactions: g(&c.compactions),
        low_space_compactions: g(&c.low_space_compactions),
        checkpoints: g(&c.checkpoints),
        trivial_moves: g(&c.trivial_moves),
        bands_per_level,
        bytes_per_level,
        avg_bands_probed_per_get: if gets == 0 {
            0.0
        } else {
            g(&c.get_probes) as f64 / gets as f64
        },
        bloom_skips: g(&c.bloom_skips),
        overlap_count,
        free_bands: free,
        log_bands,
        memtable_bytes: sv.mem.approximate_bytes()
            + sv.imm.as_ref().map_or(0, |m| m.approximate_bytes()),
        memtable_index_bytes: (sv.mem.point_index_bytes()
            + sv.imm.as_ref().map_or(0, |m| m.point_index_bytes()))
            as u64,
        slowdowns: g(&c.slowdowns),
        stalls: g(&c.stalls),
        stall_ns: g(&c.stall_ns),
        syncs: g(&c.syncs),
        grouped_syncs: g(&c.grouped_syncs),
        flushes_beside_compaction: g(&c.flushes_beside_compaction),
        write_groups: g(&c.write_groups),
        grouped_writes: g(&c.grouped_writes),
        last_sequence: db.last_seq(),
    }
}
