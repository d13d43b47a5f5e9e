//! Configuration. `Default` is the one source of every default; each field says its default
//! and the trade-off it controls.

use serde::{Deserialize, Serialize};

/// Band organisation and compaction policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Mode {
    /// SMR-friendly organisation (paper §4.3): two levels, overlapping key ranges allowed in
    /// both, selection pruned by the sequentiality metric, trivial moves. The default.
    #[default]
    Soc,
    /// LevelDB-style organisation (paper §3): seven levels, non-overlapping levels ≥ 1, a
    /// round-robin choice of the band to compact, one SSTable per band.
    Loc,
}

/// What the on-disk format fixes when a database is created ([`crate::Db::create`]). It is
/// recorded in the superblock, and [`crate::Db::open`] reads it from there: it cannot be given
/// again, so it can never disagree with the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FormatOptions {
    /// Organisation and compaction policy. Default [`Mode::Soc`].
    pub mode: Mode,
}

impl FormatOptions {
    /// The format of an SMRDB-LOC (LevelDB-style) database.
    pub fn loc() -> Self {
        FormatOptions { mode: Mode::Loc }
    }
}

/// Options of [`crate::Db::create`] and [`crate::Db::open`] that may change from one open to
/// the next (nothing here changes how existing bytes are read: each band records its own
/// block, filter and histogram layout).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Options {
    /// Bytes of key-value data buffered in the memtable before it is flushed to a band.
    /// Default `None` = the band (zone) capacity less 1/32 of it (at least 64 KiB) for the
    /// band's index, filter, histogram and footer, so that one memtable fills one band, as
    /// the paper does (a memtable is charged 32 bytes per version beyond its key and value,
    /// more than a version's header in a data block, so its data fits in the rest; a flush
    /// that outgrows a band continues in another).
    pub memtable_bytes: Option<u64>,
    /// Log buffer: records are written to the log band when this many bytes are buffered, or
    /// at a synced write. Default 1 MiB (the paper's value). Larger buffers mean fewer, larger
    /// log writes and more data lost on a crash of unsynced writes.
    pub log_buffer_bytes: u64,
    /// Hand every write's log records to the device before the write returns, as LevelDB and
    /// RocksDB hand theirs to the kernel: a crash of the process (not of the machine) then
    /// loses nothing acknowledged. Records still short of a log band chunk are written to one
    /// of two tail slots in the conventional area (one sector, `docs/formats/smrdb.md`), and
    /// go to the log band as a chunk once they outgrow a slot. Costs a sector written per
    /// small write, and on the band a padded sector per chunk of records (records larger than
    /// a slot take a chunk each: with 4 KiB values the log band holds about twice the data).
    /// `None` (the default) turns it on where the device's writes go to the host's page cache
    /// (`ZonedDevice::host_page_cache`: a banded file, zone files), where a write is handed
    /// over at the cost of a copy and survives the process; off on the emulator (its state
    /// lives in the process: a crash of the process loses the drive too) and on raw zoned
    /// devices (each record would be a command to the drive; ZenFS, RocksDB's zoned back end,
    /// also keeps its log in the process until a sync). `Some(false)` keeps up to
    /// `log_buffer_bytes` of acknowledged records in the process until a synced write or a
    /// full buffer everywhere (the paper's behaviour: `tegula bench paper` runs with it);
    /// `Some(true)` writes through everywhere.
    pub log_write_through: Option<bool>,
    /// Target size of a data block in a band; the unit of the block cache and of GET reads.
    /// Default 4 KiB.
    pub block_size: usize,
    /// Keep each data block that fits in `block_size` (rounded up to whole sectors) inside
    /// whole sectors, as RocksDB's `block_align` does: a block ends before an entry would
    /// carry it across the boundary, and zeros pad it to the boundary. A get that misses the
    /// block cache then reads one sector instead of the two an unaligned 4 KiB block spans.
    /// Costs the padding, on average about half an entry per block (a block of entries larger
    /// than a sector is not padded): about 1.5% with 100-byte values, 12% with 1000-byte ones.
    /// Default off (LevelDB's layout, which the paper figures use); `tegula serve resp` turns
    /// it on. Readers do not depend on it (the index holds every block's offset and length).
    pub block_align: bool,
    /// Bloom filter bits per key. Default 10 (≈ 1% false positives); 0 disables filters.
    pub bloom_bits_per_key: u32,
    /// Size of each band's byte-based equi-depth histogram (built from the index; its buckets
    /// hold equal shares of the band's data bytes). Default 4 KiB, the paper's fixed size:
    /// larger histograms estimate sequentiality better and cost more memory per band.
    pub histogram_bytes: usize,
    /// Keep a hash index of each key's newest version beside the memtable's tree, so that a
    /// get at the latest snapshot costs one hash probe instead of a descent of a tree of up
    /// to millions of versions (the largest cost of a get served from the memtable: a third
    /// of the RESP server's CPU under `redis-benchmark -t get -P 16`). It takes about 5-10
    /// bytes of memory per key held (50-100 once the log has become a tree), beyond `memtable_bytes` (which measures what the band will
    /// hold, not memory; see `Stats::memtable_index_bytes`). Beside it the versions are kept
    /// in a log sorted when first read in order instead of in a tree (`memtable/order.rs`):
    /// no tree descent per write. Default true (10 M puts of 100 bytes: 24 % more puts per
    /// second and 10 % less peak memory than with the tree, docs/performance/smrdb.md);
    /// `tegula bench paper` turns it off, as its figures were measured.
    pub memtable_point_index: bool,
    /// Capacity of the LRU cache of decoded data blocks. Default 8 MiB.
    pub block_cache_bytes: u64,
    /// Put a block a get missed in the block cache only when it missed recently before as
    /// well (see `BlockCache::with_second_miss_admission`): gets spread over data many times
    /// the cache's size search blocks where they were read instead of copying each in and
    /// evicting another; blocks asked for repeatedly still enter. Seeks' first blocks too.
    /// Default true (10 M keys of 100 B, 8 MiB cache: 15 % less CPU per seek, 23 % per get,
    /// docs/performance/smrdb.md); `tegula bench paper` turns it off, as its figures were
    /// measured without it (it changes which reads the cache serves).
    pub block_cache_second_miss: bool,
    /// L0 band count that triggers an L0→L1 compaction. Default 4 (LevelDB's value).
    pub l0_compaction_trigger: usize,
    /// L0 band count at which each write is delayed by `slowdown_factor` milliseconds, to let
    /// compaction catch up. Default 20 (RocksDB's `level0_slowdown_writes_trigger`); capped
    /// on small drives, see [`Options::fitted_to_bands`].
    pub l0_slowdown: usize,
    /// L0 band count at which writes wait for compaction. Default 36 (RocksDB's
    /// `level0_stop_writes_trigger`); capped on small drives, see [`Options::fitted_to_bands`].
    pub l0_stop: usize,
    /// Delay per write in milliseconds while L0 is at or above `l0_slowdown`. Default 1.0
    /// (LevelDB's 1 ms); 0 disables the slowdown.
    pub slowdown_factor: f64,
    /// Most L0 bands one L0→L1 compaction takes (the oldest and newer ones overlapping it).
    /// Default 12: with an `l0_stop` of 36 a compaction of four bands left L0 growing faster
    /// than it shrank. Capped on small drives, see [`Options::fitted_to_bands`].
    pub l0_compaction_max_bands: usize,
    /// SOC: an L1→L1 compaction runs when some L1 band overlaps more than this many other L1
    /// bands. Default 12: lower keeps fewer overlapping bands for scans and GETs (Bloom
    /// filters hide most of them from GETs) at the price of rewriting L1 more often — on
    /// random inserts, 2 writes about 3× the compaction bytes of 12 (see `docs/guides/smrdb.md`).
    pub l1_overlap_trigger: usize,
    /// LOC: bands allowed in level 1 before it is compacted into level 2; each deeper level
    /// holds `loc_level_multiplier` times more. Default 4.
    pub loc_level1_bands: u64,
    /// LOC: size ratio of adjacent levels. Default 10.
    pub loc_level_multiplier: u64,
    /// Free bands kept back so that compaction can always proceed; memtable flushes and log
    /// growth fail with `NoSpace` rather than use them. Default 2. On a thin-provisioned
    /// device (`ZonedDevice::zone_space` is `Some`) the reserve is at least
    /// `l0_compaction_trigger + 2`, and a compaction short of room runs checkpointed.
    pub reserve_bands: u32,
    /// Most log bands the current memtable may use before it is flushed early (synced small
    /// writes pad to a sector each and fill log bands faster than the memtable). Default 4.
    pub max_log_bands: u32,
    /// Run flushes and compactions on a background thread. Default true; false runs them
    /// inline in the writing thread (deterministic; used by tests).
    pub background_compaction: bool,
    /// With `background_compaction`, flush an immutable memtable beside a running compaction:
    /// on a flush thread of its own (RocksDB's flush threads), and failing that at a band
    /// boundary of the compaction (LevelDB's "prioritize immutable compaction work"), so that
    /// writers wait for a flush, never for a compaction, whenever the flush leaves the
    /// compaction the free bands it still needs. Default true: without it,
    /// `overwrite` of 1 million 4 KiB values ran at 0.76-0.82x RocksDB's rate, with it (and
    /// the L0 limits above) 0.87-1.08x (docs/performance/smrdb.md, "overwrite").
    pub flush_during_compaction: bool,
    /// Largest read-ahead window of scans (which start at 32 KiB and double up to it), of
    /// compaction inputs while `compaction_read_ahead_bytes` is 0, and the least window a
    /// compaction input gets when the compaction's read-ahead budget is spent. Default 1 MiB.
    pub read_ahead_bytes: usize,
    /// Size of each sequential read of a compaction input (see
    /// [`crate::compaction::input`]); 0 (the default) reads inputs as scans read bands. A
    /// compaction alternates between its inputs, and on a disk each switch costs a seek and
    /// half a revolution on average: larger windows (8 MiB: four 2 MiB tracks) make that a
    /// smaller share. Off by default because it moves the paper figures' ratios: see
    /// `docs/performance/kvimr.md` ("Shrinking the common work").
    pub compaction_read_ahead_bytes: usize,
    /// Most bytes of read-ahead windows one compaction holds at once over all its inputs
    /// when `compaction_read_ahead_bytes` is set. An input asking when the budget is spent
    /// gets a `read_ahead_bytes` window (or one block, if larger). Default 64 MiB.
    pub compaction_read_ahead_budget: usize,
    /// Size of the sequential writes of flushes and compactions. Default 1 MiB.
    pub write_chunk_bytes: usize,
    /// Verify data block checksums on every read. Default true.
    pub verify_checksums: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            memtable_bytes: None,
            log_buffer_bytes: 1 << 20,
            log_write_through: None,
            block_size: 4096,
            block_align: false,
            bloom_bits_per_key: 10,
            histogram_bytes: 4096,
            memtable_point_index: true,
            block_cache_bytes: 8 << 20,
            block_cache_second_miss: true,
            l0_compaction_trigger: 4,
            l0_slowdown: 20,
            l0_stop: 36,
            slowdown_factor: 1.0,
            l0_compaction_max_bands: 12,
            l1_overlap_trigger: 12,
            loc_level1_bands: 4,
            loc_level_multiplier: 10,
            reserve_bands: 2,
            max_log_bands: 4,
            background_compaction: true,
            flush_during_compaction: true,
            read_ahead_bytes: 1 << 20,
            compaction_read_ahead_bytes: 0,
            compaction_read_ahead_budget: 64 << 20,
            write_chunk_bytes: 1 << 20,
            verify_checksums: true,
        }
    }
}

impl Options {
    /// LevelDB's L0 limits (`l0_slowdown` 8, `l0_stop` 12, `l0_compaction_max_bands` 4) and
    /// no flushes during compactions: the engine the SMRDB paper measured was built on
    /// LevelDB, and `tegula bench paper smrdb` keeps its figures on these.
    pub fn with_leveldb_l0_limits(self) -> Options {
        Options {
            l0_slowdown: 8,
            l0_stop: 12,
            l0_compaction_max_bands: 4,
            flush_during_compaction: false,
            ..self
        }
    }

    /// The options the engine runs with on a drive of `bands` data bands: L0 at the stop may
    /// hold at most a third of them (`l0_stop` at most `bands / 3`, never below
    /// `l0_compaction_trigger + 2`), the slowdown starts no later than one band before the
    /// stop, and one L0 compaction takes at most a third of the stop's bands (at least
    /// `l0_compaction_trigger`). RocksDB's limits suit a large drive; on a 16-band drive an L0
    /// of 36 bands could never be written, let alone merged.
    pub fn fitted_to_bands(self, bands: usize) -> Options {
        let trigger = self.l0_compaction_trigger.max(1);
        let stop = self.l0_stop.min((bands / 3).max(trigger + 2));
        let slowdown = self
            .l0_slowdown
            .min(stop.saturating_sub(1).max(trigger + 1));
        let max_bands = self.l0_compaction_max_bands.min((stop / 3).max(trigger));
        Options {
            l0_stop: stop,
            l0_slowdown: slowdown,
            l0_compaction_max_bands: max_bands,
            ..self
        }
    }
}

/// Options of one write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Make the write durable (log written and device cache flushed) before returning.
    /// Concurrent synced writers share one device flush (group commit). Default false.
    ///
    /// A synced write that follows writes made with `disable_wal` whose memtable has not
    /// been flushed yet flushes the memtable first (those writes are in no log), so that a
    /// synced write is durable together with everything acknowledged before it.
    pub sync: bool,
    /// Do not write this batch to the log (RocksDB's `disableWAL`). Default false.
    ///
    /// The batch is applied to the memtable and visible at once, but it is **durable only
    /// once its memtable is flushed to a band**: by a memtable switch when the memtable is
    /// full, by [`crate::Db::flush`], by a later synced write (see `sync`), or by
    /// [`crate::Db::close`]. A crash before that loses it, and with it every write made
    /// after it (logged or not), so that recovery still yields the state after a prefix of
    /// the acknowledged writes. It saves the log's copy of every byte: sequential loads
    /// write each byte to the disk once instead of twice. Cannot be combined with `sync`.
    pub disable_wal: bool,
}

#[cfg(test)]
mod tests {
    use super::Options;

    #[test]
    fn large_drives_keep_the_rocksdb_like_l0_limits() {
        let o = Options::default().fitted_to_bands(128);
        assert_eq!(
            (o.l0_slowdown, o.l0_stop, o.l0_compaction_max_bands),
            (20, 36, 12)
        );
    }

    #[test]
    fn small_drives_cap_l0_to_a_third_of_their_bands() {
        let o = Options::default().fitted_to_bands(30);
        assert_eq!(
            (o.l0_slowdown, o.l0_stop, o.l0_compaction_max_bands),
            (9, 10, 4)
        );
        // Never below the trigger's room, however small the drive.
        let o = Options::default().fitted_to_bands(6);
        assert_eq!(
            (o.l0_slowdown, o.l0_stop, o.l0_compaction_max_bands),
            (5, 6, 4)
        );
        for bands in 0..200 {
            let o = Options::default().fitted_to_bands(bands);
            assert!(o.l0_compaction_trigger < o.l0_slowdown, "{bands}");
            assert!(o.l0_slowdown < o.l0_stop, "{bands}");
            assert!(
                o.l0_compaction_max_bands >= o.l0_compaction_trigger,
                "{bands}"
            );
        }
    }

    #[test]
    fn leveldb_limits_are_leveldbs() {
        let o = Options::default().with_leveldb_l0_limits();
        assert_eq!(
            (o.l0_slowdown, o.l0_stop, o.l0_compaction_max_bands),
            (8, 12, 4)
        );
        assert!(!o.flush_during_compaction);
        // Already within any drive of 36 bands or more.
        assert_eq!(o.clone().fitted_to_bands(36).l0_stop, 12);
    }
}
