//! RocksDB's own `db_bench` (Debian rocksdb-tools) on the mounted file system, at a small
//! scale with tiny memtables and SST files so that flushes, compactions, renames of CURRENT,
//! unlinks of obsolete files and several zones all happen; then unmount, mount again and
//! read every key back with `--use_existing_db`, and check the image. Skips with a visible
//! message where FUSE, root/fusermount3 or db_bench are missing.
#![allow(clippy::unwrap_used)]

use std::io::Write as _; // skips are written past the test harness's capture, so CI shows them

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

const DB_BENCH: &str = "db_bench";
/// Keys per phase: ~4 MB of values per fill at 200-byte values.
const NUM: u64 = 20_000;

fn skip_reason() -> Option<String> {
    if let Some(why) = fuse_missing() {
        return Some(why);
    }
    if Command::new(DB_BENCH).arg("--help").output().is_err() {
        return Some("db_bench is not installed (Debian package rocksdb-tools)".into());
    }
    None
}

fn mount(image: &Path, mp: &Path) -> Result<FuseMount, String> {
    mount_image(image, mp, true)
}

fn db_bench(db: &Path, benchmarks: &str, extra: &[&str]) -> String {
    let out = Command::new(DB_BENCH)
        .arg(format!("--db={}", db.display()))
        .arg(format!("--benchmarks={benchmarks}"))
        .arg(format!("--num={NUM}"))
        .args([
            "--value_size=200",
            "--write_buffer_size=262144",
            "--target_file_size_base=262144",
            "--max_bytes_for_level_base=1048576",
            "--level0_file_num_compaction_trigger=2",
            "--compression_type=none",
            "--threads=1",
            "--progress_reports=0",
            "--statistics=0",
        ])
        .args(extra)
        .output()
        .expect("db_bench runs");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "db_bench {benchmarks} failed:\n{text}"
    );
    text
}

/// `(found, asked)` from db_bench's last "(X of Y found)".
fn found(text: &str) -> (u64, u64) {
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with("readrandom") && l.contains(" found)"))
        .unwrap_or_else(|| panic!("no readrandom line in:\n{text}"));
    let inner = &line[line.rfind('(').unwrap() + 1..line.rfind(" found)").unwrap()];
    let mut it = inner
        .split(" of ")
        .map(|n| n.trim().parse::<u64>().unwrap());
    (it.next().unwrap(), it.next().unwrap())
}

#[test]
fn rocksdb_db_bench_runs_on_the_mount_and_reads_everything_back_after_a_remount() {
    if let Some(why) = skip_reason() {
        let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), 8);
    let mp = tmp.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    let m = match mount(&img, &mp) {
        Ok(m) => m,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "SKIPPED: FUSE mount failed: {e}");
            return;
        }
    };
    let db = mp.join("db");
    // fillrandom and fillseq each start a fresh database (deleting the old one's files);
    // after fillseq every key of the range exists, so the last readrandom finds them all.
    let text = db_bench(
        &db,
        "fillrandom,overwrite,readrandom,fillseq,readrandom,readseq",
        &["--sync=0"],
    );
    let (hit, asked) = found(&text);
    assert_eq!(hit, asked, "keys missing before the remount:\n{text}");
    // Flushes and compactions created and deleted many SST files.
    let files = std::fs::read_dir(&db).unwrap().count();
    assert!(files >= 3, "{files} files in the database directory");
    m.unmount();

    let m = mount(&img, &mp).expect("remount");
    let text = db_bench(
        &db,
        "readrandom,readseq",
        &["--use_existing_db=1", "--reads=5000"],
    );
    let (hit, asked) = found(&text);
    assert_eq!(hit, asked, "keys missing after the remount:\n{text}");
    m.unmount();

    let mut fs = common::open_read_only(&img);
    let zones_written = fs.zone_stats().iter().filter(|z| z.used > 0).count();
    let r = fs.check(true).unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    eprintln!(
        "db_bench on the mount: {zones_written} zones in use, {} files, {} bytes verified",
        r.files, r.verified
    );
}
