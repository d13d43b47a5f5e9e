//! Tiny benchmark runs end to end through the public API: every db_bench benchmark and every
//! YCSB workload against the in-memory reference engine, and (feature `compare`) against
//! RocksDB and LevelDB in a temporary directory, checking counts, found keys, the data left
//! behind, and the JSON schema.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use tegula_bench::dbbench::{self, DbBenchConfig};
use tegula_bench::report::{write_json, REQUIRED_KEYS};
use tegula_bench::ycsb::{self, YcsbConfig};
use tegula_bench::{
    BenchResult, EngineFactory, EngineKind, EngineOptions, KvEngine, Observer, Quiet, Target,
};
use tegula_kv::engines::memory::MemoryEngine;

const NUM: u64 = 2000;

fn cfg(benchmarks: &str) -> DbBenchConfig {
    DbBenchConfig {
        benchmarks: benchmarks.split(',').map(String::from).collect(),
        num: NUM,
        ..Default::default()
    }
}

/// Counts the results an observer receives.
#[derive(Default)]
struct Results(AtomicUsize);

impl Observer for Results {
    fn result(&self, _: &BenchResult) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

fn by_name(results: &[BenchResult]) -> BTreeMap<String, BenchResult> {
    results
        .iter()
        .map(|r| (r.benchmark.clone(), r.clone()))
        .collect()
}

fn check_db_bench(factory: &EngineFactory, threads: usize) {
    let mut c = cfg("fillseq,readrandom,readseq,readmissing,seekrandom,overwrite,fillsync,deleterandom,fillrandom,readrandom");
    c.threads = threads;
    c.seek_nexts = 5;
    let seen = Results::default();
    let out = dbbench::run(factory, &c, &seen).expect("db_bench run");
    assert_eq!(seen.0.load(Ordering::Relaxed), 10);
    assert_eq!(out.len(), 10);
    let engine = factory.kind().name();
    for r in &out {
        assert_eq!(r.engine, engine);
        assert!(r.ops_per_sec > 0.0, "{}", r.benchmark);
        assert!(
            r.p50_us <= r.p99_us && r.p99_us <= r.p999_us,
            "{}",
            r.benchmark
        );
    }
    let m = by_name(&out[..9]);
    assert_eq!(m["fillseq"].ops, NUM);
    assert_eq!(m["fillseq"].bytes, NUM * (16 + 100));
    // After fillseq every key exists.
    assert_eq!(out[1].benchmark, "readrandom");
    assert_eq!(out[1].found, Some(NUM));
    assert_eq!(m["readseq"].ops, NUM);
    assert_eq!(m["readmissing"].found, Some(0));
    assert_eq!(m["seekrandom"].found, Some(NUM));
    assert!(m["seekrandom"].bytes > NUM * 116 * 5);
    assert_eq!(m["overwrite"].ops, NUM);
    assert_eq!(m["fillsync"].ops, 2);
    assert_eq!(m["deleterandom"].ops, NUM);
    // fillrandom starts fresh and draws keys with replacement: about 1 - 1/e of the key space
    // exists afterwards.
    let found = out[9].found.expect("found") as f64 / NUM as f64;
    assert!((0.55..0.72).contains(&found), "found {found}");
}

fn check_ycsb(factory: &EngineFactory) {
    for w in ['a', 'b', 'c', 'd', 'e', 'f'] {
        let mut c = YcsbConfig::new(w).expect("workload");
        c.recordcount = 500;
        c.operationcount = 1000;
        let seen = Results::default();
        let out = ycsb::run(factory, &c, &seen).expect("ycsb run");
        assert_eq!(seen.0.load(Ordering::Relaxed), 2);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].benchmark, format!("ycsb-{w}-load"));
        assert_eq!(out[0].ops, 500);
        assert_eq!(out[1].benchmark, format!("ycsb-{w}-run"));
        assert_eq!(out[1].ops, 1000);
        let ops = &out[1].latency_by_op;
        let count = |k: &str| ops.get(k).map_or(0, |l| l.count);
        match w {
            'a' => assert!(count("READ") > 400 && count("UPDATE") > 400),
            'b' => assert!(count("READ") > 900 && count("UPDATE") > 20),
            'c' => assert_eq!(count("READ"), 1000),
            'd' => assert!(count("READ") > 900 && count("INSERT") > 20),
            'e' => assert!(count("SCAN") > 900 && count("INSERT") > 20),
            'f' => assert!(count("READ-MODIFY-WRITE") > 400 && count("READ") > 400),
            _ => unreachable!(),
        }
        // Readers only ask for records that exist: every read, scan and RMW finds one.
        // (In F the READ latencies include the reads of read-modify-writes: every op finds.)
        let finds = if w == 'f' {
            1000
        } else {
            count("READ") + count("SCAN")
        };
        assert_eq!(out[1].found, Some(finds), "workload {w}");
    }
}

fn check_json(results: &[BenchResult]) {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("out.json");
    write_json(&p, results).expect("json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).expect("read")).expect("parse");
    let arr = v.as_array().expect("array");
    assert_eq!(arr.len(), results.len());
    for o in arr {
        for k in REQUIRED_KEYS {
            assert!(o.get(k).is_some(), "missing {k}");
        }
    }
}

#[test]
fn every_db_bench_benchmark_runs_on_the_reference_engine() {
    let f = EngineFactory::new(EngineKind::Memory, Target::Memory, EngineOptions::default())
        .expect("factory");
    check_db_bench(&f, 1);
    check_db_bench(&f, 3);
}

#[test]
fn every_ycsb_workload_runs_on_the_reference_engine() {
    let f = EngineFactory::new(EngineKind::Memory, Target::Memory, EngineOptions::default())
        .expect("factory");
    check_ycsb(&f);
}

#[test]
fn fillseq_leaves_exactly_the_keys_and_value_sizes_asked_for() {
    let e = MemoryEngine::new();
    let mut c = cfg("fillseq");
    c.value_size = 333;
    c.key_size = 20;
    let r = dbbench::run_one(&e, "fillseq", &c, &Quiet).expect("run");
    assert_eq!(r.ops, NUM);
    assert_eq!(e.len(), NUM as usize);
    let mut n = 0u64;
    e.scan(b"", usize::MAX, &mut |k, v| {
        assert_eq!(k, tegula_bench::keys::key(n, 20).as_slice());
        assert_eq!(v.len(), 333);
        n += 1;
        true
    })
    .expect("scan");
    assert_eq!(n, NUM);
}

/// An engine whose "device" claims one nanosecond per put: a durable write benchmark on it
/// reports more user bytes per device second than its 1 MB/s media, and is flagged.
struct TooFast {
    inner: MemoryEngine,
    puts: std::sync::atomic::AtomicU64,
}

impl KvEngine for TooFast {
    fn name(&self) -> &str {
        "too-fast"
    }
    fn put(&self, key: &[u8], value: &[u8]) -> tegula_kv::Result<()> {
        self.puts.fetch_add(1, Ordering::Relaxed);
        self.inner.put(key, value)
    }
    fn get(&self, key: &[u8]) -> tegula_kv::Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }
    fn delete(&self, key: &[u8]) -> tegula_kv::Result<()> {
        self.inner.delete(key)
    }
    fn write_batch(&self, ops: &[tegula_bench::BatchOp], sync: bool) -> tegula_kv::Result<()> {
        self.inner.write_batch(ops, sync)
    }
    fn scan(
        &self,
        start: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> tegula_kv::Result<usize> {
        self.inner.scan(start, limit, visit)
    }
    fn flush(&self) -> tegula_kv::Result<()> {
        Ok(())
    }
    fn device_counters(&self) -> Option<tegula_bench::DeviceCounters> {
        let n = self.puts.load(Ordering::Relaxed);
        Some(tegula_bench::DeviceCounters {
            now_ns: Some(n),
            bytes_written: n * 116,
            ..Default::default()
        })
    }
    fn media_limit(&self, _since: &tegula_bench::DeviceCounters) -> Option<f64> {
        Some(1e6)
    }
    fn close(self: Box<Self>) -> tegula_kv::Result<()> {
        Ok(())
    }
}

#[test]
fn a_durable_result_above_the_media_rate_is_flagged() {
    let e = TooFast {
        inner: MemoryEngine::new(),
        puts: Default::default(),
    };
    let mut c = cfg("fillseq");
    c.flush_after_write = true;
    let r = dbbench::run_one(&e, "fillseq", &c, &Quiet).expect("run");
    assert_eq!(r.device_time_durable, Some(true));
    let m = r.media_check.as_ref().expect("checked");
    assert!(!m.ok, "{m:?}");
    assert!(r.line().contains("ABOVE THE MEDIA LIMIT"), "{}", r.line());
    // Not durable at the end: said so, and never compared with the media.
    let r = dbbench::run_one(&e, "fillseq", &cfg("fillseq"), &Quiet).expect("run");
    assert_eq!(r.device_time_durable, Some(false));
    assert!(r.media_check.is_none());
    assert!(r.line().contains("not all durable"), "{}", r.line());
}

#[test]
fn a_stop_request_ends_the_run_after_the_benchmarks_that_finished() {
    /// Asks to stop once `after` results arrived.
    struct StopAfter {
        after: usize,
        seen: AtomicUsize,
    }
    impl Observer for StopAfter {
        fn result(&self, _: &BenchResult) {
            self.seen.fetch_add(1, Ordering::Relaxed);
        }
        fn should_stop(&self) -> bool {
            self.seen.load(Ordering::Relaxed) >= self.after
        }
    }
    let f = EngineFactory::new(EngineKind::Memory, Target::Memory, EngineOptions::default())
        .expect("factory");
    let obs = StopAfter {
        after: 1,
        seen: AtomicUsize::new(0),
    };
    let e = dbbench::run(&f, &cfg("fillseq,readrandom,readseq"), &obs).expect_err("stopped");
    assert!(e.is_interrupted(), "{e}");
    assert_eq!(obs.seen.load(Ordering::Relaxed), 1);
    // A stop seen at a progress check ends the running benchmark without a result.
    let obs = StopAfter {
        after: 0,
        seen: AtomicUsize::new(0),
    };
    let e = dbbench::run_one(&MemoryEngine::new(), "fillseq", &cfg("fillseq"), &obs)
        .expect_err("stopped");
    assert!(e.is_interrupted(), "{e}");
}

#[test]
fn results_serialise_with_every_required_key() {
    let f = EngineFactory::new(EngineKind::Memory, Target::Memory, EngineOptions::default())
        .expect("factory");
    let out = dbbench::run(&f, &cfg("fillseq,readrandom"), &Quiet).expect("run");
    check_json(&out);
    assert!(out.iter().all(|r| r.device_seconds.is_none()));
}

#[cfg(feature = "compare")]
mod compare {
    use super::*;

    fn dir_factory(kind: EngineKind, dir: &std::path::Path) -> EngineFactory {
        EngineFactory::new(
            kind,
            Target::Dir(Some(dir.to_path_buf())),
            EngineOptions {
                // Small buffers so that flushes and compactions happen in a tiny run.
                write_buffer_size: 64 << 10,
                statistics: true,
                ..EngineOptions::default()
            },
        )
        .expect("factory")
    }

    #[test]
    fn every_db_bench_benchmark_runs_on_rocksdb_and_leveldb() {
        for kind in [EngineKind::Rocksdb, EngineKind::Leveldb] {
            let dir = tempfile::tempdir().expect("tmp");
            let f = dir_factory(kind, dir.path());
            check_db_bench(&f, 1);
            check_db_bench(&f, 2);
        }
    }

    #[test]
    fn every_ycsb_workload_runs_on_rocksdb_and_leveldb() {
        for kind in [EngineKind::Rocksdb, EngineKind::Leveldb] {
            let dir = tempfile::tempdir().expect("tmp");
            check_ycsb(&dir_factory(kind, dir.path()));
        }
    }

    #[test]
    fn rocksdb_and_leveldb_hold_the_same_data_as_the_reference_after_the_same_run() {
        let c = cfg("fillrandom");
        let reference = MemoryEngine::new();
        dbbench::run_one(&reference, "fillrandom", &c, &Quiet).expect("reference");
        let mut want = Vec::new();
        reference
            .scan(b"", usize::MAX, &mut |k, v| {
                want.push((k.to_vec(), v.to_vec()));
                true
            })
            .expect("scan");
        for kind in [EngineKind::Rocksdb, EngineKind::Leveldb] {
            let dir = tempfile::tempdir().expect("tmp");
            let f = dir_factory(kind, dir.path());
            let e = f.open(true).expect("open");
            let r = dbbench::run_one(e.as_ref(), "fillrandom", &c, &Quiet).expect("run");
            assert!(r.write_amp.is_some(), "{} reports write-amp", kind.name());
            e.flush().expect("flush");
            let mut got = Vec::new();
            e.scan(b"", usize::MAX, &mut |k, v| {
                got.push((k.to_vec(), v.to_vec()));
                true
            })
            .expect("scan");
            assert_eq!(got, want, "{}", kind.name());
            assert!(e.stats_json().is_some());
            e.close().expect("close");
        }
    }

    /// RocksDB runs with its WAL disabled (and the flushed data is all there); LevelDB, which
    /// has no such option, refuses the flag with a reason.
    #[test]
    fn disable_wal_runs_on_rocksdb_and_is_refused_by_leveldb() {
        let dir = tempfile::tempdir().expect("tmp");
        let o = EngineOptions {
            disable_wal: true,
            ..EngineOptions::default()
        };
        let f = EngineFactory::new(
            EngineKind::Rocksdb,
            Target::Dir(Some(dir.path().to_path_buf())),
            o.clone(),
        )
        .expect("factory");
        let mut c = cfg("fillseq,readrandom");
        c.flush_after_write = true;
        let out = dbbench::run(&f, &c, &Quiet).expect("run");
        assert_eq!(out[1].found, Some(NUM));
        let e = EngineFactory::new(EngineKind::Leveldb, Target::Dir(None), o)
            .expect_err("leveldb has no disableWAL");
        assert!(e.to_string().contains("LevelDB has no option"), "{e}");
    }

    #[test]
    fn fresh_runs_destroy_the_previous_database() {
        let dir = tempfile::tempdir().expect("tmp");
        let f = dir_factory(EngineKind::Rocksdb, dir.path());
        dbbench::run(&f, &cfg("fillseq"), &Quiet).expect("first");
        let mut c = cfg("fillsync,readrandom");
        c.num = 5000;
        let out = dbbench::run(&f, &c, &Quiet).expect("second");
        // fillsync wrote 5 random keys into a fresh database: almost nothing is found.
        assert!(out[1].found.expect("found") <= 5);
    }
}

#[cfg(feature = "smrdb")]
mod smrdb {
    use super::*;

    fn small_drive() -> tegula_device::DiskConfig {
        let mut cfg = tegula_device::profile("hm-smr").expect("profile");
        // Tiny bands so that flushes and compactions run within a 2000-key benchmark.
        cfg.zones.zone_size = 256 << 10;
        cfg.capacity = 256 << 20;
        cfg
    }

    #[test]
    fn every_db_bench_benchmark_runs_on_smrdb_soc_and_loc_with_device_figures() {
        for kind in [EngineKind::Tegula, EngineKind::TegulaLoc] {
            let f = EngineFactory::new(
                kind,
                Target::Emulated(small_drive()),
                EngineOptions::default(),
            )
            .expect("factory");
            check_db_bench(&f, 1);
            // With the flush timed in, every distinct key (about 1 - 1/e of them) reaches a
            // band; without it the puts may sit in the 1 MiB log buffer and the memtable.
            let mut c = cfg("fillrandom");
            c.flush_after_write = true;
            let out = dbbench::run(&f, &c, &Quiet).expect("run");
            let r = &out[0];
            assert!(r.device_seconds.expect("device time") > 0.0);
            assert!(r.device_bytes_written.expect("bytes") >= NUM * 116 * 6 / 10);
            assert!(r.write_amp.is_some());
            check_json(&out);
        }
    }

    /// With the log disabled and the flush timed in, the device receives the data once: the
    /// log bands get nothing, and every key is readable afterwards.
    #[test]
    fn disable_wal_writes_each_byte_once() {
        let mut written = Vec::new();
        for disable_wal in [false, true] {
            let f = EngineFactory::new(
                EngineKind::Tegula,
                Target::Emulated(small_drive()),
                EngineOptions {
                    disable_wal,
                    ..EngineOptions::default()
                },
            )
            .expect("factory");
            let mut c = cfg("fillseq,readrandom");
            c.flush_after_write = true;
            let out = dbbench::run(&f, &c, &Quiet).expect("run");
            assert_eq!(out[1].found, Some(NUM));
            let stats = out[0].engine_stats.as_ref().expect("engine stats");
            let log = stats["log_bytes"].as_u64().expect("log_bytes");
            assert_eq!(log == 0, disable_wal, "log bytes {log}");
            written.push(out[0].device_bytes_written.expect("bytes"));
        }
        // The log's copy is gone: well under the logged run's bytes, at least the data.
        assert!(written[1] * 10 < written[0] * 7, "{written:?}");
        assert!(written[1] >= NUM * 116, "{written:?}");
    }

    #[test]
    fn every_ycsb_workload_runs_on_smrdb() {
        let f = EngineFactory::new(
            EngineKind::Tegula,
            Target::Emulated(small_drive()),
            EngineOptions::default(),
        )
        .expect("factory");
        check_ycsb(&f);
    }

    /// A banded plain file: real file I/O without a drive model, so bytes but no device time;
    /// every benchmark runs and the data survives a reopen.
    #[test]
    fn every_db_bench_benchmark_runs_on_a_banded_file() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("f.banded");
        let f = EngineFactory::new(
            EngineKind::Tegula,
            Target::Banded {
                path: path.clone(),
                zone_size: 256 << 10,
                capacity: 256 << 20,
                zone_files: false,
            },
            EngineOptions::default(),
        )
        .expect("factory");
        check_db_bench(&f, 1);
        let out = dbbench::run(&f, &cfg("fillseq"), &Quiet).expect("fill");
        let r = &out[0];
        assert_eq!(r.storage, Some(tegula_bench::StorageLabel::Banded));
        assert!(r.device_seconds.is_none(), "no drive model, no device time");
        assert!(r.device_bytes_written.expect("bytes counted") > 0);
        let d = r.durability.as_ref().expect("durability");
        // SMRDB writes its log through to the file (`log_write_through`, the default).
        assert_eq!(d.process_crash, tegula_bench::Loss::Nothing);
        assert_eq!(d.power_loss, tegula_bench::Loss::SinceSync);
        assert!(std::path::Path::new(&format!("{}.zones", path.display())).exists());
        let mut c = cfg("readrandom");
        c.use_existing_db = true;
        let out = dbbench::run(&f, &c, &Quiet).expect("reopen");
        assert_eq!(out[0].found, Some(NUM));
        check_json(&out);
    }

    /// A directory of zone files: every benchmark runs, the results say `zone-files`, the
    /// data survives a reopen.
    #[test]
    fn every_db_bench_benchmark_runs_on_zone_files() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("z.zones");
        let f = EngineFactory::new(
            EngineKind::Tegula,
            Target::Banded {
                path: path.clone(),
                zone_size: 256 << 10,
                capacity: 256 << 20,
                zone_files: true,
            },
            EngineOptions::default(),
        )
        .expect("factory");
        check_db_bench(&f, 1);
        let out = dbbench::run(&f, &cfg("fillseq"), &Quiet).expect("fill");
        let r = &out[0];
        assert_eq!(r.storage, Some(tegula_bench::StorageLabel::ZoneFiles));
        assert!(r.device_seconds.is_none(), "no drive model, no device time");
        assert!(r.device_bytes_written.expect("bytes counted") > 0);
        assert!(tegula_device::ZoneFiles::is_device(&path));
        let mut c = cfg("readrandom");
        c.use_existing_db = true;
        let out = dbbench::run(&f, &c, &Quiet).expect("reopen");
        assert_eq!(out[0].found, Some(NUM));
        check_json(&out);
    }

    /// The default storage: every result says `image`, a flushed fill is durable at the end of
    /// its device time and within the media rate where it went; without the flush it says it
    /// is not durable and is not checked.
    #[test]
    fn a_flushed_fill_on_an_image_is_durable_and_within_the_media_rate() {
        let dir = tempfile::tempdir().expect("tmp");
        let f = EngineFactory::new(
            EngineKind::Tegula,
            Target::Image(dir.path().join("d.img"), Some(small_drive())),
            EngineOptions::default(),
        )
        .expect("factory");
        let mut c = cfg("fillseq,readrandom");
        c.flush_after_write = true;
        let out = dbbench::run(&f, &c, &Quiet).expect("run");
        assert_eq!(out[0].storage, Some(tegula_bench::StorageLabel::Image));
        assert_eq!(out[0].device_time_durable, Some(true));
        let m = out[0].media_check.as_ref().expect("checked");
        assert!(m.ok && m.user_mb_per_device_sec > 0.0, "{m:?}");
        assert!(m.user_mb_per_device_sec < m.limit_mb_per_sec);
        assert_eq!(out[1].device_time_durable, None, "a read");
        let out = dbbench::run(&f, &cfg("fillseq"), &Quiet).expect("run");
        assert_eq!(out[0].device_time_durable, Some(false));
        assert!(out[0].media_check.is_none());
    }

    #[test]
    fn a_disk_image_is_created_then_reused_or_recreated() {
        let dir = tempfile::tempdir().expect("tmp");
        let img = dir.path().join("d.img");
        let f = EngineFactory::new(
            EngineKind::Tegula,
            Target::Image(img.clone(), Some(small_drive())),
            EngineOptions::default(),
        )
        .expect("factory");
        dbbench::run(&f, &cfg("fillseq"), &Quiet).expect("fill");
        assert!(img.exists());
        let f = EngineFactory::new(
            EngineKind::Tegula,
            Target::Image(img.clone(), None),
            EngineOptions::default(),
        )
        .expect("factory");
        let mut c = cfg("readrandom");
        c.use_existing_db = true;
        let out = dbbench::run(&f, &c, &Quiet).expect("read existing");
        assert_eq!(out[0].found, Some(NUM));
        let out = dbbench::run(&f, &cfg("fillsync,readrandom"), &Quiet).expect("fresh");
        assert!(out[1].found.expect("found") <= 2);
    }
}
