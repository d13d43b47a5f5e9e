//! LevelDB through its C API, on the shared adapter [`CEngine`]: write buffer = band size
//! (256 MiB), 8 MiB LRU block cache, 10 bits/key Bloom filter, no compression. What only
//! LevelDB needs lives here: the cache and filter policy set on the options (the filter
//! outlives the database), a flush through `CompactRange`, user bytes counted by the adapter
//! for a write amplification, and `leveldb.stats` parsed for compaction bytes.

use super::capi::{self, CEngine, CLib};
use super::leveldb_ffi as ffi;
use crate::error::Result;
use crate::EngineOptions;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};

/// An open LevelDB database.
pub(crate) type LevelEngine = CEngine<Level>;

/// LevelDB's part of the adapter: its filter policy and the user bytes written.
#[derive(Debug)]
pub(crate) struct Level {
    filter: *mut ffi::FilterPolicy,
    user_bytes: AtomicU64,
}

impl Default for Level {
    fn default() -> Self {
        Level {
            filter: ptr::null_mut(),
            user_bytes: AtomicU64::new(0),
        }
    }
}

// SAFETY: the filter policy is created once in `configure`, only read by LevelDB afterwards and
// destroyed in `release`, after the database is closed.
unsafe impl Send for Level {}
unsafe impl Sync for Level {}

capi::thread_batch!(ffi);

// SAFETY: every function forwards to the LevelDB C function of the same name.
unsafe impl CLib for Level {
    const NAME: &'static str = "leveldb";
    const KIND: crate::EngineKind = crate::EngineKind::Leveldb;
    capi::common_api!(ffi);

    unsafe fn configure(
        &mut self,
        o: *mut ffi::Options,
        cache: *mut ffi::Cache,
        _wo: *mut ffi::WriteOptions,
        opts: &EngineOptions,
    ) {
        // LevelDB's options keep raw pointers to the cache and the filter.
        ffi::options_set_cache(o, cache);
        if opts.bloom_bits > 0 {
            self.filter = ffi::filterpolicy_create_bloom(opts.bloom_bits as i32);
            ffi::options_set_filter_policy(o, self.filter);
        }
    }

    unsafe fn release(&mut self) {
        if !self.filter.is_null() {
            ffi::filterpolicy_destroy(self.filter);
            self.filter = ptr::null_mut();
        }
    }

    fn user_bytes(&self, bytes: u64) {
        self.user_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// LevelDB has no flush call; a compaction of the empty range `[k, k)` with an empty key
    /// flushes the memtable (what `CompactRange` does first) without compacting files.
    fn flush(e: &CEngine<Self>) -> Result<()> {
        // A null range would compact everything, so give a non-null empty range.
        let k = [0u8; 1];
        // SAFETY: the database is open; empty key slices.
        unsafe { ffi::compact_range(e.db_ptr(), k.as_ptr().cast(), 0, k.as_ptr().cast(), 0) };
        Ok(())
    }

    /// LevelDB exposes no count of running or due compactions: this polls its level table
    /// (`leveldb.stats`) until no level is due by LevelDB's own rule (`NeedsCompaction`: four
    /// files in L0, or 10^L MiB in level L ≥ 1, see [`compaction_due`]) and the table,
    /// compaction counters included, stayed the same over 100 ms, or until the table stayed
    /// the same for 10 s (LevelDB idle). Seek-triggered compactions, which LevelDB starts
    /// from reads, are not waited for.
    fn wait_for_background(e: &CEngine<Self>) -> Result<()> {
        let table = || {
            e.property("leveldb.stats").ok_or_else(|| {
                crate::error::Error::Internal("LevelDB has no property leveldb.stats".into())
            })
        };
        // A table unchanged this many polls in a row (10 s) means LevelDB is idle, whatever
        // the rounded sizes say: never wait for ever on a level the rule misjudges.
        const IDLE_POLLS: u32 = 100;
        let mut last = table()?;
        let mut unchanged = 0;
        loop {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let now = table()?;
            unchanged = if now == last { unchanged + 1 } else { 0 };
            if unchanged > 0
                && (!compaction_due(&parse_level_sizes(&now)) || unchanged >= IDLE_POLLS)
            {
                return Ok(());
            }
            last = now;
        }
    }

    fn stats_json(e: &CEngine<Self>) -> Option<serde_json::Value> {
        let levels = level_stats(e)?;
        Some(serde_json::json!({
            "user_bytes": e.lib().user_bytes.load(Ordering::Relaxed),
            "levels": levels
                .iter()
                .map(|(l, files, mb)| serde_json::json!({"level": l, "files": files, "written_mb": mb}))
                .collect::<Vec<_>>(),
        }))
    }

    /// (memtable flush + compaction bytes written, from `leveldb.stats`) / user bytes written;
    /// the log is not counted. LevelDB reports whole megabytes, so small runs read coarsely.
    fn write_amp(e: &CEngine<Self>) -> Option<f64> {
        let user = e.lib().user_bytes.load(Ordering::Relaxed);
        let written = Self::compaction_bytes(e)?;
        (user > 0).then(|| written as f64 / user as f64)
    }

    fn compaction_bytes(e: &CEngine<Self>) -> Option<u64> {
        let levels = level_stats(e)?;
        Some((levels.iter().map(|l| l.2).sum::<f64>() * 1_048_576.0) as u64)
    }
}

/// Per level (level, files, MB written) from `leveldb.stats`; the written column counts
/// memtable flushes ("memtable compactions") and compactions alike.
fn level_stats(e: &CEngine<Level>) -> Option<Vec<(u32, u64, f64)>> {
    Some(parse_level_stats(&e.property("leveldb.stats")?))
}

fn parse_level_stats(s: &str) -> Vec<(u32, u64, f64)> {
    parse_level_table(s)
        .map(|(level, files, _, written)| (level, files, written))
        .collect()
}

/// (level, files, size in MiB) of each level in `leveldb.stats`.
fn parse_level_sizes(s: &str) -> Vec<(u32, u64, f64)> {
    parse_level_table(s)
        .map(|(level, files, size, _)| (level, files, size))
        .collect()
}

/// The rows of `leveldb.stats`' level table: (level, files, size MiB, written MiB); the
/// columns `Level Files Size(MB) Time(sec) Read(MB) Write(MB)`.
fn parse_level_table(s: &str) -> impl Iterator<Item = (u32, u64, f64, f64)> + '_ {
    s.lines().filter_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() != 6 {
            return None;
        }
        Some((
            f[0].parse().ok()?,
            f[1].parse().ok()?,
            f[2].parse().ok()?,
            f[5].parse().ok()?,
        ))
    })
}

/// LevelDB 1.23's size rule for a compaction (`VersionSet::Finalize`): L0 at its trigger
/// of 4 files, a deeper level L at 10^L MiB. `leveldb.stats` rounds sizes to whole MiB, and
/// LevelDB keeps each level just under its limit, so a level shown at exactly its limit is
/// taken as not due (if it is, the compaction LevelDB starts at once changes the table).
fn compaction_due(levels: &[(u32, u64, f64)]) -> bool {
    levels.iter().any(|&(level, files, mib)| {
        if level == 0 {
            files >= 4
        } else {
            mib > 10f64.powi(level as i32)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_level_table_of_leveldb_stats_is_parsed() {
        let s = "                               Compactions\n\
                 Level  Files Size(MB) Time(sec) Read(MB) Write(MB)\n\
                 --------------------------------------------------\n  \
                 0        2        4         0        0         4\n  \
                 1        1        3         0        5         3\n";
        assert_eq!(parse_level_stats(s), vec![(0, 2, 4.0), (1, 1, 3.0)]);
        assert_eq!(parse_level_sizes(s), vec![(0, 2, 4.0), (1, 1, 3.0)]);
        assert!(!compaction_due(&parse_level_sizes(s)));
    }

    #[test]
    fn leveldbs_size_rule_says_when_a_compaction_is_due() {
        assert!(compaction_due(&[(0, 4, 8.0)]));
        assert!(compaction_due(&[(0, 1, 2.0), (1, 5, 11.0)]));
        assert!(!compaction_due(&[(0, 1, 2.0), (1, 5, 10.0)]));
        assert!(compaction_due(&[(2, 50, 101.0)]));
        assert!(!compaction_due(&[
            (0, 3, 6.0),
            (1, 5, 9.0),
            (2, 40, 99.0),
            (3, 400, 999.0)
        ]));
    }
}
