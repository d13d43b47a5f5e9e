//! How much of what an engine acknowledged a crash would lose, said next to every result, so
//! that a comparison between engines that promise different things is not mistaken for a
//! comparison of speed alone.
//!
//! Without synced writes, RocksDB and LevelDB hand every write's log record to the kernel
//! (`write(2)`) before acknowledging it: a crashed process loses nothing, a power loss what the
//! kernel had not written back. SMRDB does the same on a banded file or zone files
//! (`log_write_through`, on by default there: each write's records reach the file, in a log
//! tail slot or a log chunk, before it returns, and recovery follows the log past the write
//! pointers saved at the last flush), so a crashed process loses nothing. The
//! emulated drive of a disk image keeps its volatile write cache (32 MiB on the built-in
//! profiles) and its zone write pointers in the process, so there a crashed process loses what
//! was acknowledged since SMRDB last flushed the drive, as a power loss would (and SMRDB keeps
//! up to its 1 MiB log buffer in the process there: `log_write_through` is off by default on
//! the emulator, as everywhere with `--smrdb-option log_write_through=false`). With `--sync` every engine loses nothing acknowledged: that is the setting that
//! compares them at equal durability.

use crate::EngineKind;
use crate::StorageLabel;
use serde::{Deserialize, Serialize};

/// What a crash loses of the writes an engine acknowledged, from least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "loses", content = "writes")]
pub enum Loss {
    /// Nothing acknowledged.
    Nothing,
    /// At most this many of the latest writes (a sync every N writes: N - 1).
    LastWrites(u64),
    /// The writes since the engine last made its log durable.
    SinceSync,
    /// The writes since the last memtable flush (writes without a log).
    SinceFlush,
    /// Everything: the data lives only in the process.
    Everything,
}

impl Loss {
    /// The loss in words: `loses nothing acknowledged`, ….
    pub fn describe(self) -> String {
        match self {
            Loss::Nothing => "loses nothing acknowledged".into(),
            Loss::LastWrites(n) => format!("loses at most the last {n} writes"),
            Loss::SinceSync => "loses the writes since the last sync".into(),
            Loss::SinceFlush => "loses the writes since the last memtable flush".into(),
            Loss::Everything => "loses everything".into(),
        }
    }
}

/// When a run's writes ask for durability.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPolicy {
    /// Never (db_bench's default).
    Never,
    /// Every N-th write (`--sync_every N`, N ≥ 2).
    EveryN(u64),
    /// Every write (`--sync`, `fillsync`).
    Every,
}

impl SyncPolicy {
    /// The policy of `--sync` / `--sync_every`.
    pub fn of(sync: bool, sync_every: u64) -> Self {
        match (sync, sync_every) {
            (true, _) | (false, 1) => SyncPolicy::Every,
            (false, 0) => SyncPolicy::Never,
            (false, n) => SyncPolicy::EveryN(n),
        }
    }
}

/// What an engine's acknowledged writes survive, as configured for a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Durability {
    /// What a crash of the benchmark process loses (the machine keeps running).
    pub process_crash: Loss,
    /// What a power loss (or kernel crash) loses.
    pub power_loss: Loss,
    /// Why, in a sentence.
    pub why: String,
}

impl Durability {
    /// The durability of `engine` on `storage` with the run's sync policy and log setting;
    /// `cache_bytes` is the emulated drive's volatile write cache (image storage),
    /// `log_write_through` SMRDB's option of that name (ignored for the other engines).
    pub fn of(
        engine: EngineKind,
        storage: StorageLabel,
        sync: SyncPolicy,
        disable_wal: bool,
        cache_bytes: Option<u64>,
        log_write_through: bool,
    ) -> Self {
        let d = |process_crash, power_loss, why: String| Durability {
            process_crash,
            power_loss,
            why,
        };
        if engine == EngineKind::Memory || storage == StorageLabel::Memory {
            return d(
                Loss::Everything,
                Loss::Everything,
                "the data lives only in this process's memory".into(),
            );
        }
        let unsynced = match sync {
            SyncPolicy::Every => Loss::Nothing,
            SyncPolicy::EveryN(n) => Loss::LastWrites(n - 1),
            SyncPolicy::Never => Loss::SinceSync,
        };
        if disable_wal {
            return d(
                Loss::SinceFlush,
                Loss::SinceFlush,
                "writes without the log are durable only once their memtable is flushed".into(),
            );
        }
        match engine {
            EngineKind::Rocksdb | EngineKind::Leveldb => d(
                Loss::Nothing,
                unsynced,
                "every write's log record is handed to the kernel before it is acknowledged; \
                 it reaches the disk when a synced write fsyncs the log"
                    .into(),
            ),
            _ if sync == SyncPolicy::Every => d(
                Loss::Nothing,
                Loss::Nothing,
                "every write flushes the drive before it is acknowledged".into(),
            ),
            _ if log_write_through
                && matches!(storage, StorageLabel::ZoneFiles | StorageLabel::Banded) =>
            {
                d(
                    Loss::Nothing,
                    unsynced,
                    "every write's log records are in the file before it is acknowledged (a log \
                     tail slot or a log chunk; recovery follows the log past the write pointers \
                     saved at the last flush); they reach the disk when SMRDB flushes the drive \
                     (a synced write, a new log band, a memtable flush), which fdatasyncs"
                        .into(),
                )
            }
            _ if storage == StorageLabel::ZoneFiles => d(
                unsynced,
                unsynced,
                "the 1 MiB log buffer is in this process and each zone file's write pointer is \
                 saved only when SMRDB flushes that zone (a synced write flushes the log bands, a \
                 memtable flush its bands), which fdatasyncs its file"
                    .into(),
            ),
            _ if storage == StorageLabel::Banded => d(
                unsynced,
                unsynced,
                "the 1 MiB log buffer is in this process and the zone write pointers are saved \
                 only when SMRDB flushes the drive (a synced write, a full log band, a memtable \
                 flush), which fdatasyncs the file"
                    .into(),
            ),
            _ => d(
                unsynced,
                unsynced,
                format!(
                    "{}the emulated drive's {} volatile write cache and its zone write pointers \
                     are in this process until SMRDB flushes the drive (a synced write, a full \
                     log band, a memtable flush), which fdatasyncs the image",
                    if log_write_through {
                        "every write's log records reach the emulated drive before it is \
                         acknowledged, but "
                    } else {
                        "the 1 MiB log buffer, "
                    },
                    match cache_bytes.unwrap_or(0) {
                        0 => "(disabled)".to_string(),
                        c if c % (1 << 20) == 0 => format!("{} MiB", c >> 20),
                        c => tegula_device::format_size(c),
                    }
                ),
            ),
        }
    }

    /// One line for a person: `process crash: …; power loss: … (why)`.
    pub fn line(&self) -> String {
        let say = |l: Loss| match l {
            Loss::Nothing => "nothing acknowledged is lost".to_string(),
            other => other.describe(),
        };
        format!(
            "process crash: {}; power loss: {} ({})",
            say(self.process_crash),
            say(self.power_loss),
            self.why
        )
    }

    /// The losses alone, for a result line: `process crash: …; power loss: …`.
    pub fn short(&self) -> String {
        let say = |l: Loss| match l {
            Loss::Nothing => "nothing acknowledged is lost".to_string(),
            other => other.describe(),
        };
        if self.process_crash == self.power_loss {
            format!("process crash or power loss: {}", say(self.power_loss))
        } else {
            format!(
                "process crash: {}; power loss: {}",
                say(self.process_crash),
                say(self.power_loss)
            )
        }
    }

    /// Whether two engines promise the same on both kinds of crash.
    pub fn same_as(&self, other: &Durability) -> bool {
        self.process_crash == other.process_crash && self.power_loss == other.power_loss
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(e: EngineKind, s: StorageLabel, sync: SyncPolicy) -> Durability {
        Durability::of(e, s, sync, false, Some(32 << 20), false)
    }

    #[test]
    fn unsynced_writes_are_not_equally_durable_and_synced_ones_are() {
        let t = of(EngineKind::Tegula, StorageLabel::Image, SyncPolicy::Never);
        let r = of(EngineKind::Rocksdb, StorageLabel::Dir, SyncPolicy::Never);
        assert_eq!(t.process_crash, Loss::SinceSync);
        assert_eq!(r.process_crash, Loss::Nothing);
        assert_eq!(r.power_loss, Loss::SinceSync);
        assert!(!t.same_as(&r));
        assert!(t.why.contains("32 MiB"), "{}", t.why);
        let t = of(EngineKind::Tegula, StorageLabel::Image, SyncPolicy::Every);
        let l = of(EngineKind::Leveldb, StorageLabel::Dir, SyncPolicy::Every);
        assert!(t.same_as(&l));
        assert_eq!(t.power_loss, Loss::Nothing);
    }

    #[test]
    fn memory_loses_everything_and_sync_every_n_loses_at_most_n_minus_one() {
        let m = of(EngineKind::Tegula, StorageLabel::Memory, SyncPolicy::Every);
        assert_eq!(m.power_loss, Loss::Everything);
        assert_eq!(m.process_crash, Loss::Everything);
        let t = of(
            EngineKind::Tegula,
            StorageLabel::Banded,
            SyncPolicy::of(false, 100),
        );
        assert_eq!(t.process_crash, Loss::LastWrites(99));
        let r = of(
            EngineKind::Rocksdb,
            StorageLabel::Dir,
            SyncPolicy::of(false, 100),
        );
        assert_eq!(
            (r.process_crash, r.power_loss),
            (Loss::Nothing, Loss::LastWrites(99))
        );
        let w = Durability::of(
            EngineKind::Rocksdb,
            StorageLabel::Dir,
            SyncPolicy::Never,
            true,
            None,
            false,
        );
        assert_eq!(w.process_crash, Loss::SinceFlush);
        assert_eq!(SyncPolicy::of(false, 1), SyncPolicy::Every);
    }

    #[test]
    fn smrdb_writing_its_log_through_loses_nothing_to_a_process_crash_on_files() {
        for s in [StorageLabel::Banded, StorageLabel::ZoneFiles] {
            let t = Durability::of(EngineKind::Tegula, s, SyncPolicy::Never, false, None, true);
            let r = of(EngineKind::Rocksdb, StorageLabel::Dir, SyncPolicy::Never);
            assert!(t.same_as(&r), "{s:?}: {t:?}");
            let b = of(EngineKind::Tegula, s, SyncPolicy::Never);
            assert_eq!(b.process_crash, Loss::SinceSync, "{s:?} buffered");
        }
        // The emulated drive keeps its cache in the process: a process crash is a power loss.
        let i = Durability::of(
            EngineKind::Tegula,
            StorageLabel::Image,
            SyncPolicy::Never,
            false,
            Some(32 << 20),
            true,
        );
        assert_eq!(i.process_crash, Loss::SinceSync);
        assert!(!i.why.contains("log buffer"), "{}", i.why);
    }

    #[test]
    fn the_line_names_both_crashes() {
        let r = of(EngineKind::Rocksdb, StorageLabel::Dir, SyncPolicy::Never);
        let l = r.line();
        assert!(l.starts_with("process crash: nothing acknowledged is lost; power loss: loses the writes since the last sync"), "{l}");
        assert_eq!(
            of(EngineKind::Tegula, StorageLabel::Image, SyncPolicy::Never).short(),
            "process crash or power loss: loses the writes since the last sync"
        );
        let json = serde_json::to_value(&r).expect("json");
        assert_eq!(json["process_crash"]["loses"], "nothing");
    }
}
