//! LevelDB and RocksDB through tegula's benchmark harness (`tegula bench db`) with their
//! databases on a mounted tegula fs: fill and read at a small scale with small write buffers
//! (so that memtables are flushed and compacted into many table files), unmount, check the
//! image, mount again and read every key back with `--use_existing_db`.
//!
//! Needs the `compare` feature (`cargo test -p tegula --features compare`; Debian
//! librocksdb-dev and libleveldb-dev) and FUSE (/dev/fuse, fusermount3); without either it
//! prints `SKIPPED: …` and passes.
#![allow(clippy::unwrap_used)]

mod common;

#[cfg(not(feature = "compare"))]
#[test]
fn leveldb_and_rocksdb_run_on_the_mount_through_the_harness_and_read_back_after_a_remount() {
    common::skip(
        "LevelDB and RocksDB on tegula fs need `cargo test -p tegula --features compare` \
         (Debian librocksdb-dev, libleveldb-dev)",
    );
}

#[cfg(feature = "compare")]
mod on_the_mount {
    use crate::common::{fuse_missing, run as tegula};
    use serde_json::Value;
    use std::io::Write as _;
    use std::path::{Path, PathBuf};
    use std::process::{Command, Output};
    use std::time::{Duration, Instant};

    const NUM: &str = "10000";

    fn text(o: &Output) -> String {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    }

    fn ok(args: &[&str]) -> String {
        let o = tegula(args);
        assert!(o.status.success(), "tegula {args:?} failed:\n{}", text(&o));
        text(&o)
    }

    /// A background `tegula fs mount`; unmounted (and waited for) on drop.
    struct Mount {
        mp: PathBuf,
        pid: Option<u32>,
    }

    impl Mount {
        fn new(img: &Path, mp: &Path, log: &Path) -> Result<Mount, String> {
            let o = tegula(&[
                "fs",
                "mount",
                img.to_str().unwrap(),
                mp.to_str().unwrap(),
                "--log",
                log.to_str().unwrap(),
            ]);
            if !o.status.success() {
                return Err(text(&o));
            }
            // "mounted at MP (process PID, log FILE)"
            let out = text(&o);
            let pid = out
                .split("(process ")
                .nth(1)
                .and_then(|s| s.split(',').next())
                .and_then(|s| s.trim().parse().ok());
            Ok(Mount {
                mp: mp.to_path_buf(),
                pid,
            })
        }

        /// Unmounts and waits until the mount process has written everything and exited.
        fn unmount(&mut self) {
            if let Some(pid) = self.pid.take() {
                let o = Command::new("fusermount3")
                    .arg("-u")
                    .arg(&self.mp)
                    .output()
                    .expect("fusermount3");
                assert!(o.status.success(), "fusermount3 -u: {}", text(&o));
                let t = Instant::now();
                while Path::new(&format!("/proc/{pid}")).exists() {
                    assert!(
                        t.elapsed() < Duration::from_secs(120),
                        "mount process {pid} still running"
                    );
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    }

    impl Drop for Mount {
        fn drop(&mut self) {
            if self.pid.is_some() {
                let _ = Command::new("fusermount3").arg("-u").arg(&self.mp).output();
            }
        }
    }

    /// The harness seeds benchmark `i` of a run with `seed + 7919 i` (default seed 301); a
    /// read-back run that starts with readrandom passes this seed to look up the same keys as
    /// the first run's third benchmark.
    const SEED_OF_THIRD: &str = "16139";

    /// Runs `tegula bench db` on both engines and returns its JSON results.
    fn bench(db: &Path, benchmarks: &str, json: &Path, existing: bool) -> Vec<Value> {
        let mut args = vec![
            "bench",
            "db",
            "--engine",
            "leveldb,rocksdb",
            "--db",
            db.to_str().unwrap(),
            "--benchmarks",
            benchmarks,
            "--num",
            NUM,
            "--value_size",
            "100",
            "--write_buffer_size",
            "64KiB",
            "--no_progress",
            "--json",
            json.to_str().unwrap(),
        ];
        if existing {
            args.extend(["--use_existing_db", "--seed", SEED_OF_THIRD]);
        }
        ok(&args);
        serde_json::from_str::<Value>(&std::fs::read_to_string(json).unwrap())
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }

    fn result<'a>(rs: &'a [Value], engine: &str, benchmark: &str) -> &'a Value {
        rs.iter()
            .find(|r| r["engine"] == engine && r["benchmark"] == benchmark)
            .unwrap_or_else(|| panic!("no {engine} {benchmark} result in {rs:?}"))
    }

    fn files_with(dir: &Path, ext: &str) -> usize {
        std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| e.path().extension().is_some_and(|x| x == ext))
                    .count()
            })
            .unwrap_or(0)
    }

    #[test]
    fn leveldb_and_rocksdb_run_on_the_mount_through_the_harness_and_read_back_after_a_remount() {
        if let Some(why) = fuse_missing() {
            let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let img = tmp.path().join("fs.img");
        let mp = tmp.path().join("mnt");
        let log = tmp.path().join("mount.log");
        std::fs::create_dir(&mp).unwrap();
        let img_s = img.to_str().unwrap();
        ok(&[
            "disk",
            "create",
            "--profile",
            "hm-smr",
            "--capacity",
            "512MiB",
            "--zone-size",
            "16MiB",
            "--conv-zones",
            "1",
            img_s,
        ]);
        ok(&["fs", "mkfs", img_s]);
        let mut m = match Mount::new(&img, &mp, &log) {
            Ok(m) => m,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "SKIPPED: FUSE mount failed: {e}");
                return;
            }
        };
        let db = mp.join("kv");
        let first = bench(
            &db,
            "fillseq,fillrandom,readrandom,readseq",
            &tmp.path().join("first.json"),
            false,
        );
        let mut found = Vec::new();
        for engine in ["leveldb", "rocksdb"] {
            let f = result(&first, engine, "readrandom")["found"]
                .as_u64()
                .unwrap();
            // fillrandom draws keys with repeats: most, not all, of the range exists.
            assert!(f > 10_000 / 2 && f < 10_000, "{engine}: {f} found");
            found.push(f);
        }
        // Small write buffers: memtables were flushed into table files on the mount (how
        // many remain depends on how far compaction got: LevelDB may have merged them all
        // into one).
        let ldb = files_with(&db.join("leveldb"), "ldb");
        let sst = files_with(&db.join("rocksdb"), "sst");
        assert!(ldb >= 1 && sst >= 1, "{ldb} .ldb and {sst} .sst files");
        m.unmount();
        let check = ok(&["fs", "check", img_s]);
        assert!(check.contains("no inconsistencies"), "{check}");

        let mut m = Mount::new(&img, &mp, &log).expect("remount");
        let again = bench(
            &db,
            "readrandom,readseq",
            &tmp.path().join("again.json"),
            true,
        );
        for (engine, f) in ["leveldb", "rocksdb"].into_iter().zip(found) {
            assert_eq!(
                result(&again, engine, "readrandom")["found"].as_u64(),
                Some(f),
                "{engine}: keys lost across the remount"
            );
            let before = result(&first, engine, "readseq")["ops"].as_u64();
            let after = result(&again, engine, "readseq")["ops"].as_u64();
            assert_eq!(before, after, "{engine}: readseq saw a different key count");
        }
        m.unmount();
        let check = ok(&["fs", "check", img_s]);
        assert!(check.contains("no inconsistencies"), "{check}");
        let stats = ok(&["fs", "stats", img_s, "--json"]);
        let live = serde_json::from_str::<Value>(&stats).unwrap()["total"]["live"]
            .as_u64()
            .unwrap();
        assert!(live > 0, "{stats}");
    }
}
