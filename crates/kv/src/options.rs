//! Engine settings every engine gets alike ([`EngineOptions`]), so that a comparison gives
//! each the same memory budget.

/// Engine settings shared by all engines, chosen to give every engine the same memory budget.
/// [`EngineOptions::default`] is the one source of the defaults documented on each field.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineOptions {
    /// Memtable / write buffer size in bytes (default: the band size, 256 MiB).
    pub write_buffer_size: u64,
    /// Block cache size in bytes (default 8 MiB).
    pub cache_size: u64,
    /// Bloom filter bits per key (default 10).
    pub bloom_bits: u32,
    /// Collect engine statistics that cost time (RocksDB's `statistics`); needed for RocksDB's
    /// write amplification and compaction bytes.
    pub statistics: bool,
    /// L0 file / band count that triggers a compaction (`None`: 4, LevelDB's and SMRDB's
    /// default; RocksDB's default is also 4).
    pub l0_compaction_trigger: Option<usize>,
    /// L0 count at which writes are slowed down (`None`: 8 for LevelDB, 20 for RocksDB and
    /// SMRDB, each engine's own default; SMRDB caps it on small drives).
    pub l0_slowdown: Option<usize>,
    /// L0 count at which writes stop until compaction catches up (`None`: 12 for LevelDB, 36
    /// for RocksDB and SMRDB).
    pub l0_stop: Option<usize>,
    /// SMRDB options by name (`tegula_smrdb::Options` field = JSON value), applied after the settings
    /// above: `--smrdb_option l1_overlap_trigger=8`. Ignored by the other engines.
    pub smrdb_options: Vec<(String, serde_json::Value)>,
    /// Write without the write-ahead log (db_bench's `--disable_wal`): SMRDB's
    /// `WriteOptions::disable_wal`, RocksDB's `WriteOptions::disableWAL`; writes are durable
    /// once flushed. LevelDB has no such option: opening it with this set fails.
    pub disable_wal: bool,
    /// Check each block's checksum when it is read from storage (default on). On for every
    /// engine by default, so that all of them check what they read: SMRDB's and RocksDB's
    /// default; LevelDB's default is off (`ReadOptions::verify_checksums`), so the harness
    /// turns it on for LevelDB unless this is off.
    pub verify_checksums: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            write_buffer_size: 256 << 20,
            cache_size: 8 << 20,
            bloom_bits: 10,
            statistics: false,
            l0_compaction_trigger: None,
            l0_slowdown: None,
            l0_stop: None,
            smrdb_options: Vec::new(),
            disable_wal: false,
            verify_checksums: true,
        }
    }
}
