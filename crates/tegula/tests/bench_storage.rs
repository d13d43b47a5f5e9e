//! `tegula bench db` on fair storage, end to end through the binary: the default disk image in
//! the run directory, `--in-memory` and `--banded` labelled in the output and the JSON, the
//! durability and peak RSS of every result (each engine of a multi-engine run in a process of
//! its own), `--disk` refused when it holds something a fresh run would destroy, and SIGINT
//! stopping a run with the finished benchmarks printed and written (exit 130).
#![allow(clippy::unwrap_used)]

mod common;

use common::{ok_out, run};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

fn json(path: &Path) -> Vec<Value> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v.as_array().unwrap().clone()
}

/// A small `bench db` run's arguments, with `extra` appended.
fn small<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["bench", "db", "--num", "2000", "--no_progress"];
    v.extend_from_slice(extra);
    v
}

/// Runs a small `bench db` with `extra` and `--json` into `dir/name`; returns standard output
/// and the results.
fn small_json(dir: &Path, name: &str, extra: &[&str]) -> (String, Vec<Value>) {
    let path = dir.join(name);
    let mut args = small(extra);
    args.extend(["--json", path.to_str().unwrap()]);
    let out = ok_out(&args);
    (out, json(&path))
}

#[test]
fn tegula_runs_on_a_disk_image_in_the_run_directory_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run");
    let (out, r) = small_json(
        dir.path(),
        "out.json",
        &[
            "--benchmarks",
            "fillseq,readrandom",
            "--flush",
            "--db",
            db.to_str().unwrap(),
        ],
    );
    assert!(db.join("tegula.img").is_file(), "the image is in --db");
    assert!(out.contains("[tegula on image]"), "{out}");
    assert!(out.contains("disk image"), "{out}");
    assert!(out.contains("durability: process crash"), "{out}");
    assert!(out.contains("writes durable at the end"), "{out}");
    assert_eq!(r.len(), 2);
    for o in &r {
        assert_eq!(o["storage"], "image", "{o}");
        assert_eq!(
            o["durability"]["process_crash"]["loses"], "since_sync",
            "{o}"
        );
        assert!(o["peak_rss_bytes"].as_u64().unwrap() > 1 << 20, "{o}");
    }
    assert_eq!(r[0]["device_time_durable"], true);
    assert_eq!(r[0]["media_check"]["ok"], true);
    assert!(r[1]["device_time_durable"].is_null());
}

#[test]
fn in_memory_and_banded_storage_are_asked_for_and_labelled() {
    let dir = tempfile::tempdir().unwrap();
    let (out, r) = small_json(
        dir.path(),
        "mem.json",
        &["--in-memory", "--benchmarks", "fillseq"],
    );
    assert!(out.contains("[tegula on memory]"), "{out}");
    assert!(out.contains("in memory (--in-memory"), "{out}");
    assert_eq!(r[0]["storage"], "memory");
    assert_eq!(r[0]["durability"]["power_loss"]["loses"], "everything");
    assert_eq!(r[0]["device_time_durable"], false);

    let banded = dir.path().join("plain");
    let (out, r) = small_json(
        dir.path(),
        "banded.json",
        &[
            "--banded",
            "1MiB",
            "--capacity",
            "64MiB",
            "--disk",
            banded.to_str().unwrap(),
            "--benchmarks",
            "fillseq,readrandom",
        ],
    );
    assert!(out.contains("[tegula on banded]"), "{out}");
    assert!(out.contains("no model (real file I/O)"), "{out}");
    assert_eq!(r[0]["storage"], "banded");
    assert!(r[0]["device_seconds"].is_null());
    assert!(r[0]["device_bytes_written"].as_u64().unwrap() > 0);
    assert_eq!(r[1]["found"], 2000);
    assert!(dir.path().join("plain.zones").is_file());
    // Memory and a file at once make no sense.
    let o = run(&small(&["--in-memory", "--disk", banded.to_str().unwrap()]));
    assert!(!o.status.success());
}

#[test]
fn each_engine_of_a_run_gets_its_own_process_and_peak_rss() {
    let dir = tempfile::tempdir().unwrap();
    let (out, r) = small_json(
        dir.path(),
        "out.json",
        &[
            "--engine",
            "tegula,memory",
            "--benchmarks",
            "fillseq,readrandom",
        ],
    );
    assert!(out.contains("peak RSS MiB"), "{out}");
    assert!(out.contains("durability NOT the same"), "{out}");
    assert_eq!(r.len(), 4);
    let rss: Vec<u64> = r
        .iter()
        .map(|o| o["peak_rss_bytes"].as_u64().unwrap())
        .collect();
    assert!(rss.iter().all(|&b| b > 1 << 20), "{rss:?}");
    assert_eq!(r[2]["engine"], "memory");
    assert_eq!(r[2]["storage"], "memory");
}

#[test]
fn disk_holding_a_database_is_refused_unless_forced_or_kept() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("d.img");
    let disk = img.to_str().unwrap();
    ok_out(&small(&[
        "--disk",
        disk,
        "--benchmarks",
        "fillseq",
        "--flush",
    ]));
    let o = run(&small(&["--disk", disk, "--benchmarks", "fillseq"]));
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("holds") && e.contains("--force"), "{e}");
    assert!(o.stdout.is_empty(), "refused before anything ran");
    let out = ok_out(&small(&[
        "--disk",
        disk,
        "--benchmarks",
        "readrandom",
        "--use_existing_db",
    ]));
    assert!(out.contains("(2000 of 2000 found)"), "{out}");
    ok_out(&small(&[
        "--disk",
        disk,
        "--benchmarks",
        "fillseq",
        "--force",
    ]));
    // A plain file with a file system on it, given to --banded.
    let plain = dir.path().join("ext4");
    let mut b = vec![0u8; 64 << 20];
    b[1024 + 56] = 0x53;
    b[1024 + 57] = 0xEF;
    std::fs::write(&plain, &b).unwrap();
    let o = run(&small(&[
        "--banded",
        "1MiB",
        "--disk",
        plain.to_str().unwrap(),
    ]));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("ext2/3/4"), "{e}");
    assert_eq!(std::fs::read(&plain).unwrap()[1024 + 56], 0x53, "untouched");
}

/// Runs `args`, sends SIGINT once `wait_for` appears on stdout; returns stdout and the exit
/// code.
fn interrupt_after(args: &[&str], wait_for: &str) -> (String, Option<i32>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tegula"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = String::new();
    let mut sent = false;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        out.push_str(&line);
        out.push('\n');
        if !sent && line.contains(wait_for) {
            // SAFETY: a signal to our own child, not reaped yet.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            sent = true;
        }
    }
    assert!(sent, "never saw {wait_for:?}: {out}");
    (out, child.wait().unwrap().code())
}

/// Runs `bench db ARGS` on 20,000 keys with endless random reads, interrupts it once fillseq
/// has finished and expects exit status 130 and the one result it finished in `out_json`;
/// returns standard output and that result.
fn interrupt_after_fillseq(out_json: &Path, args: &[&str]) -> (String, Value) {
    let mut all = vec!["bench", "db"];
    all.extend_from_slice(args);
    all.extend(["--num", "20000", "--reads", "2000000000", "--no_progress"]);
    all.extend(["--json", out_json.to_str().unwrap()]);
    let (out, code) = interrupt_after(&all, "fillseq      :");
    assert_eq!(code, Some(130), "{out}");
    let r = json(out_json);
    assert_eq!(r.len(), 1, "{r:?}");
    (out, r[0].clone())
}

#[test]
fn sigint_keeps_the_finished_benchmarks_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let out_json = dir.path().join("out.json");
    // One engine in this process: fillseq finishes, the long readrandom is cut short.
    let (out, r) = interrupt_after_fillseq(
        &out_json,
        &[
            "--engine",
            "memory",
            "--benchmarks",
            "fillseq,readrandom,readseq",
        ],
    );
    assert_eq!(r["benchmark"], "fillseq");
    assert!(!out.contains("readseq      :"), "{out}");

    // Two engines, each in a child process: the parent passes the signal on, keeps the first
    // engine's finished results, prints them and does not start the second engine.
    let (out, r) = interrupt_after_fillseq(
        &out_json,
        &[
            "--engine",
            "memory,tegula",
            "--in-memory",
            "--capacity",
            "2GiB",
            "--benchmarks",
            "fillseq,readrandom",
        ],
    );
    assert_eq!(r["engine"], "memory");
    assert!(
        !out.contains("--- tegula"),
        "the second engine never started: {out}"
    );
}
