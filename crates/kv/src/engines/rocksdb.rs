//! RocksDB through its C API, on the shared adapter [`CEngine`]: write buffer = band size
//! (256 MiB), 8 MiB LRU block cache, 10 bits/key full Bloom filters, no compression.
//! Everything else stays at RocksDB's defaults (which are also db_bench's for these flags).
//! What only RocksDB has lives here: block-based table options, L0 triggers, statistics,
//! `disableWAL`, and a flush call.

use super::capi::{self, take_string, CEngine, CLib};
use super::rocksdb_ffi as ffi;
use crate::error::Result;
use crate::EngineOptions;
use std::collections::HashMap;
use std::ptr;

/// An open RocksDB database.
pub(crate) type RocksEngine = CEngine<Rocks>;

/// RocksDB's part of the adapter: whether statistics are collected.
#[derive(Debug, Default)]
pub(crate) struct Rocks {
    statistics: bool,
}

capi::thread_batch!(ffi);

// SAFETY: every function forwards to the RocksDB C function of the same name.
unsafe impl CLib for Rocks {
    const NAME: &'static str = "rocksdb";
    const KIND: crate::EngineKind = crate::EngineKind::Rocksdb;
    capi::common_api!(ffi);

    unsafe fn configure(
        &mut self,
        o: *mut ffi::Options,
        cache: *mut ffi::Cache,
        wo: *mut ffi::WriteOptions,
        opts: &EngineOptions,
    ) {
        if let Some(t) = opts.l0_compaction_trigger {
            ffi::options_set_level0_file_num_compaction_trigger(o, t as i32);
        }
        if let Some(t) = opts.l0_slowdown {
            ffi::options_set_level0_slowdown_writes_trigger(o, t as i32);
        }
        if let Some(t) = opts.l0_stop {
            ffi::options_set_level0_stop_writes_trigger(o, t as i32);
        }
        // The table options are copied by the options; the filter policy passes to them.
        let table = ffi::block_based_options_create();
        ffi::block_based_options_set_block_cache(table, cache);
        if opts.bloom_bits > 0 {
            ffi::block_based_options_set_filter_policy(
                table,
                ffi::filterpolicy_create_bloom_full(opts.bloom_bits as f64),
            );
        }
        ffi::options_set_block_based_table_factory(o, table);
        ffi::block_based_options_destroy(table);
        // db_bench's defaults where they differ from RocksDB's (its OPTIONS file, 7.8.3):
        // pipelined WAL and memtable writes, 16 table-cache shards, a 128 GiB hard limit on
        // pending compaction bytes. (Its delayed_write_rate of 8 MiB/s and index shortening
        // mode 2 have no C setter; neither matters unless writes stall or to index size.)
        ffi::options_set_enable_pipelined_write(o, 1);
        ffi::options_set_table_cache_numshardbits(o, 4);
        ffi::options_set_hard_pending_compaction_bytes_limit(o, 128 << 30);
        if opts.statistics {
            ffi::options_enable_statistics(o);
        }
        self.statistics = opts.statistics;
        if opts.disable_wal {
            // Unsynced writes only: RocksDB refuses a synced write without the WAL.
            ffi::writeoptions_disable_wal(wo, 1);
        }
    }

    /// No per-operation perf counters in this thread: db_bench's `--perf_level=1`.
    fn thread_started(&self) {
        // SAFETY: sets a thread-local level; no pointers.
        unsafe { ffi::set_perf_level(ffi::PERF_LEVEL_DISABLE) }
    }

    fn flush(e: &CEngine<Self>) -> Result<()> {
        // SAFETY: flush options created and destroyed here; the database is open.
        unsafe {
            let fo = ffi::flushoptions_create();
            ffi::flushoptions_set_wait(fo, 1);
            let mut err = ptr::null_mut();
            ffi::flush(e.db_ptr(), fo, &mut err);
            ffi::flushoptions_destroy(fo);
            e.check(err, "flush")
        }
    }

    /// Polls RocksDB's own counters of running and pending background work (the C API of
    /// RocksDB 7.8 has no `WaitForCompact`) until all are zero.
    fn wait_for_background(e: &CEngine<Self>) -> Result<()> {
        const BUSY: [&str; 4] = [
            "rocksdb.num-running-flushes",
            "rocksdb.num-running-compactions",
            "rocksdb.mem-table-flush-pending",
            "rocksdb.compaction-pending",
        ];
        loop {
            let mut busy = false;
            for p in BUSY {
                let v = e.property(p).ok_or_else(|| {
                    crate::error::Error::Internal(format!("RocksDB has no property {p}"))
                })?;
                busy |= v.trim() != "0";
            }
            if !busy {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    fn stats_json(e: &CEngine<Self>) -> Option<serde_json::Value> {
        let mut m = serde_json::Map::new();
        for p in [
            "rocksdb.num-files-at-level0",
            "rocksdb.num-files-at-level1",
            "rocksdb.num-files-at-level2",
            "rocksdb.num-files-at-level3",
            "rocksdb.estimate-num-keys",
            "rocksdb.total-sst-files-size",
        ] {
            if let Some(v) = e.property(p) {
                let v = v.trim();
                m.insert(
                    p.trim_start_matches("rocksdb.").to_string(),
                    v.parse::<u64>()
                        .map(serde_json::Value::from)
                        .unwrap_or_else(|_| v.into()),
                );
            }
        }
        if let Some(t) = tickers(e) {
            for k in [
                "rocksdb.bytes.written",
                "rocksdb.wal.bytes",
                "rocksdb.flush.write.bytes",
                "rocksdb.compact.write.bytes",
                "rocksdb.compact.read.bytes",
                "rocksdb.stall.micros",
            ] {
                if let Some(v) = t.get(k) {
                    m.insert(k.trim_start_matches("rocksdb.").to_string(), (*v).into());
                }
            }
        }
        Some(serde_json::Value::Object(m))
    }

    /// (flush + compaction bytes written) / user bytes written, from RocksDB's statistics;
    /// the WAL is not counted (as in RocksDB's own W-Amp column).
    fn write_amp(e: &CEngine<Self>) -> Option<f64> {
        let t = tickers(e)?;
        let user = *t.get("rocksdb.bytes.written")?;
        (user > 0).then(|| {
            (t.get("rocksdb.flush.write.bytes").copied().unwrap_or(0)
                + t.get("rocksdb.compact.write.bytes").copied().unwrap_or(0)) as f64
                / user as f64
        })
    }

    fn compaction_bytes(e: &CEngine<Self>) -> Option<u64> {
        tickers(e)?.get("rocksdb.compact.write.bytes").copied()
    }
}

/// RocksDB's statistics counters (only with `statistics` on).
fn tickers(e: &CEngine<Rocks>) -> Option<HashMap<String, u64>> {
    if !e.lib().statistics {
        return None;
    }
    // SAFETY: options with statistics enabled; the string is ours to free.
    let s = take_string::<Rocks>(unsafe { ffi::options_statistics_get_string(e.options_ptr()) })?;
    Some(parse_tickers(&s))
}

/// Parses the `NAME COUNT : N` lines of RocksDB's statistics string.
fn parse_tickers(s: &str) -> HashMap<String, u64> {
    s.lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(" COUNT : ")?;
            Some((name.trim().to_string(), rest.trim().parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticker_lines_are_parsed_and_others_ignored() {
        let t = parse_tickers(
            "rocksdb.bytes.written COUNT : 1200\nrocksdb.db.get.micros P50 : 1.0\n\
             rocksdb.compact.write.bytes COUNT : 7\n",
        );
        assert_eq!(t.get("rocksdb.bytes.written"), Some(&1200));
        assert_eq!(t.get("rocksdb.compact.write.bytes"), Some(&7));
        assert_eq!(t.len(), 2);
    }
}
