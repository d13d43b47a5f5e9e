//! KVIMR as a product, end to end with the real binary: `tegula db create` on a raw
//! interlaced (`imr`) image makes a KVIMR store with SMRDB-LOC on it, and every `db` command,
//! `bench db`, `bench ycsb` and `serve resp` reopen it with the options stored at create; `db
//! stats` shows the store's figures over its life; a drive-managed IMR image is refused with
//! the reason. And `kill -9` of `serve resp --appendfsync always` on a KVIMR image, 30 times:
//! every acknowledged SET reads back.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A raw `imr` image of `capacity` in `dir`.
fn imr(dir: &Path, name: &str, capacity: &str) -> String {
    image(dir, name, "imr", capacity, &[])
}

/// The `kvimr` object of `db stats --json`.
fn kvimr_stats(img: &str) -> Value {
    let v = ok_json(&["db", "stats", img, "--json"]);
    assert!(v["kvimr"].is_object(), "no KVIMR figures: {v}");
    v["kvimr"].clone()
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn db_commands_keep_a_database_on_a_kvimr_store_of_an_imr_image() {
    let dir = tempfile::tempdir().unwrap();
    let img = imr(dir.path(), "imr.img", "1GiB");
    let out = ok_out(&["db", "create", &img]);
    assert!(
        out.contains("SMRDB-Loc database on a KVIMR store")
            && out.contains("compaction-aware allocation, merged read-modify-write"),
        "{out}"
    );
    ok(&["db", "put", &img, "k", "v"]);
    assert_eq!(ok_out(&["db", "get", &img, "k"]), "v\n");
    let after_one = n(&kvimr_stats(&img)["lifetime"]["syncs"]);
    ok_in(
        &["db", "put", &img, "big", "-x"],
        Some(&vec![b'z'; 100_000]),
    );
    ok(&["db", "put", &img, "gone", "soon"]);
    ok(&["db", "del", &img, "gone"]);
    // Each command reopened the store (recovery, then SMRDB's); nothing was lost.
    let scan = ok_out(&["db", "scan", &img]);
    let keys: Vec<&str> = scan
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(keys, ["big", "k"], "{scan}");
    assert_eq!(ok_out(&["db", "get", &img, "big"]).len(), 100_001);
    fails_with(&["db", "get", &img, "gone"], "not found");
    ok(&["db", "compact", &img]);
    assert!(ok_out(&["db", "check", &img]).ends_with("ok\n"));
    let text = ok_out(&["db", "stats", &img]);
    for line in [
        "kvimr store         compaction-aware allocation, merged read-modify-write, SSTables of 16.00 MiB",
        "space usage",
        "read-modify-writes",
        "top-track rewrites",
        "syncs",
        "placement L",
    ] {
        assert!(text.contains(line), "no {line:?} in:\n{text}");
    }
    let k = kvimr_stats(&img);
    assert_eq!(k["policy"], "compaction-aware");
    assert_eq!(k["rmw"], "merged");
    assert_eq!(n(&k["sstable_bytes"]), 16 << 20);
    // The counters are the store's life, kept on the image across commands.
    let l = &k["lifetime"];
    assert!(n(&l["syncs"]) > after_one, "{l}");
    assert!(n(&l["bytes_appended"]) > 100_000, "{l}");
    assert!(n(&k["data_files"]) >= 1, "{k}");
    // A second create is refused; a forced one with other settings keeps them on the image.
    fails_with(&["db", "create", &img], "already holds a database");
    let out = ok_out(&[
        "db",
        "create",
        &img,
        "--force",
        "--policy",
        "three-phase",
        "--rmw",
        "naive",
        "--sstable-size",
        "8MiB",
    ]);
    assert!(out.contains("three-phase allocation, naive"), "{out}");
    fails_with(&["db", "get", &img, "k"], "not found");
    ok(&["db", "put", &img, "k", "again"]);
    let k = kvimr_stats(&img);
    assert_eq!(
        (k["policy"].as_str(), k["rmw"].as_str()),
        (Some("three-phase"), Some("naive"))
    );
    assert_eq!(n(&k["sstable_bytes"]), 8 << 20);
    // The KVIMR settings apply to imr images only.
    let smr = image(dir.path(), "smr.img", "hm-smr", "4GiB", &[]);
    fails_with(
        &["db", "create", &smr, "--policy", "seq"],
        "apply to an interlaced (imr) disk image",
    );
    // A raw imr image holds no database until `db create`.
    let raw = imr(dir.path(), "raw.img", "1GiB");
    fails_with(&["db", "put", &raw, "a", "b"], "run `tegula db create");
}

#[test]
fn a_full_store_runs_merged_read_modify_writes_under_commands_from_outside() {
    let dir = tempfile::tempdir().unwrap();
    let img = imr(dir.path(), "small.img", "256MiB");
    ok(&["db", "create", &img, "--sstable-size", "2MiB"]);
    // Past half the data tracks, compaction-aware allocation puts the deep levels' SSTables
    // next to valid tops: merged read-modify-writes.
    ok(&[
        "bench",
        "db",
        "--disk",
        &img,
        "--engine",
        "tegula-loc",
        "--use_existing_db",
        "--benchmarks",
        "fillrandom",
        "--num",
        "90000",
        "--value_size",
        "1000",
    ]);
    let k = kvimr_stats(&img);
    let l = &k["lifetime"];
    assert!(k["usage"].as_f64().unwrap() > 0.5, "{k}");
    assert!(n(&l["rmw_ops"]) > 0 && n(&l["top_rewrites"]) > 0, "{l}");
    assert!(n(&l["rmw_syncs"]) > 0, "{l}");
    assert!(ok_out(&["db", "check", &img]).ends_with("ok\n"));
}

#[test]
fn bench_db_and_ycsb_run_on_an_imr_image() {
    let dir = tempfile::tempdir().unwrap();
    let img = imr(dir.path(), "imr.img", "1GiB");
    ok(&["db", "create", &img]);
    ok(&["db", "put", &img, "keep", "me"]);
    // SMRDB-SOC is refused before the image is recreated.
    fails_with(
        &[
            "bench",
            "db",
            "--disk",
            &img,
            "--force",
            "--benchmarks",
            "fillseq",
            "--num",
            "100",
        ],
        "--engine tegula-loc",
    );
    assert_eq!(ok_out(&["db", "get", &img, "keep"]), "me\n");
    // Without --force a fresh benchmark would destroy the database.
    fails_with(
        &[
            "bench",
            "ycsb",
            "--disk",
            &img,
            "--engine",
            "tegula-loc",
            "--workload",
            "a",
        ],
        "--force",
    );
    let out = ok_out(&[
        "bench",
        "ycsb",
        "--disk",
        &img,
        "--engine",
        "tegula-loc",
        "--force",
        "--workload",
        "a",
        "--recordcount",
        "3000",
        "--operationcount",
        "3000",
    ]);
    assert!(out.contains("ycsb-a-run"), "{out}");
    // The fresh start kept the store's format; the benchmark's database checks out.
    assert!(ok_out(&["db", "check", &img]).ends_with("ok\n"));
    assert_eq!(kvimr_stats(&img)["policy"], "compaction-aware");
    // On a raw imr image, the benchmark formats the store itself.
    let raw = imr(dir.path(), "raw.img", "1GiB");
    let out = ok_out(&[
        "bench",
        "db",
        "--disk",
        &raw,
        "--engine",
        "tegula-loc",
        "--benchmarks",
        "fillrandom,readrandom",
        "--num",
        "5000",
    ]);
    assert!(out.contains("readrandom"), "{out}");
    assert_eq!(kvimr_stats(&raw)["rmw"], "merged");
}

#[test]
fn a_drive_managed_imr_image_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let dm = image(dir.path(), "dm.img", "imr", "1GiB", &["--drive-managed"]);
    for force in [false, true] {
        let mut args = vec!["db", "create", dm.as_str()];
        if force {
            args.push("--force");
        }
        let e = fails_with(&args, "is a drive-managed IMR drive");
        assert!(e.contains("a block device without zones"), "{e}");
        assert!(
            e.contains("create the image without --drive-managed"),
            "{e}"
        );
    }
    fails_with(
        &["db", "put", &dm, "a", "b"],
        "a block device without zones",
    );
    // Still the drive-managed drive it was.
    let info = ok_out(&["disk", "info", &dm]);
    assert!(info.contains("drive-managed:"), "{info}");
}

// ---------------------------------------------------------------------------------------
// `tegula serve resp` on a KVIMR image.

/// A running `tegula serve resp`; killed on drop.
struct Served {
    child: Child,
    port: u16,
}

impl Served {
    fn start(img: &str, extra: &[&str]) -> Served {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = tegula_cmd()
            .args(["serve", "resp", img, "--port", &port.to_string()])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                let mut e = String::new();
                child.stderr.take().unwrap().read_to_string(&mut e).unwrap();
                panic!("server exited with {status}: {e}");
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Served { child, port }
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, sig) }, 0);
    }

    fn wait(mut self) -> (std::process::ExitStatus, String) {
        let status = self.child.wait().unwrap();
        let mut e = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut e)
            .unwrap();
        (status, e)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw-socket RESP client.
struct Client {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        Client { s, buf: Vec::new() }
    }

    fn send(&mut self, args: &[&[u8]]) -> std::io::Result<()> {
        let mut m = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            m.extend(format!("${}\r\n", a.len()).bytes());
            m.extend_from_slice(a);
            m.extend_from_slice(b"\r\n");
        }
        self.s.write_all(&m)
    }

    /// One reply: a line, or a bulk string's body.
    fn read(&mut self) -> std::io::Result<Vec<u8>> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = self.buf[..i].to_vec();
                if line.first() == Some(&b'$') && line != b"$-1" {
                    let n: usize = std::str::from_utf8(&line[1..]).unwrap().parse().unwrap();
                    if self.buf.len() >= i + 2 + n + 2 {
                        let body = self.buf[i + 2..i + 2 + n].to_vec();
                        self.buf.drain(..i + 2 + n + 2);
                        return Ok(body);
                    }
                } else {
                    self.buf.drain(..i + 2);
                    return Ok(line);
                }
            }
            let mut chunk = [0u8; 65536];
            let n = self.s.read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn cmd(&mut self, args: &[&[u8]]) -> Vec<u8> {
        self.send(args).unwrap();
        self.read().unwrap()
    }
}

#[test]
fn serve_resp_answers_set_and_get_on_a_kvimr_image_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let img = imr(dir.path(), "imr.img", "1GiB");
    ok(&["db", "create", &img]);
    let before = n(&kvimr_stats(&img)["lifetime"]["syncs"]);
    let s = Served::start(&img, &["--appendfsync", "always"]);
    let mut c = Client::connect(s.addr());
    assert_eq!(c.cmd(&[b"SET", b"foo", b"bar"]), b"+OK");
    assert_eq!(c.cmd(&[b"GET", b"foo"]), b"bar");
    for i in 0..200 {
        let k = format!("key{i}");
        assert_eq!(c.cmd(&[b"SET", k.as_bytes(), &vec![b'v'; 3000]]), b"+OK");
    }
    assert_eq!(c.cmd(&[b"DBSIZE"]), b":201");
    drop(c);
    s.signal(libc::SIGTERM);
    let (status, err) = s.wait();
    assert!(status.success(), "{err}");
    let s = Served::start(&img, &[]);
    let mut c = Client::connect(s.addr());
    assert_eq!(c.cmd(&[b"GET", b"foo"]), b"bar");
    assert_eq!(c.cmd(&[b"GET", b"key199"]), vec![b'v'; 3000]);
    drop(c);
    s.signal(libc::SIGTERM);
    assert!(s.wait().0.success());
    // Every synced SET was a store sync, counted on the image.
    let after = n(&kvimr_stats(&img)["lifetime"]["syncs"]);
    assert!(after >= before + 200, "syncs {before} -> {after}");
    assert!(ok_out(&["db", "check", &img]).ends_with("ok\n"));
}

/// 30 times: writers SET unique keys through `serve resp --appendfsync always` on a KVIMR
/// image (half of them pipelining 8 at a time), the server is killed with SIGKILL, and a new
/// server reads back every SET acknowledged in any round so far, exactly.
#[test]
fn kill_9_of_serve_resp_on_a_kvimr_image_loses_no_acknowledged_set() {
    let dir = tempfile::tempdir().unwrap();
    let img = imr(dir.path(), "imr.img", "1GiB");
    ok(&["db", "create", &img]);
    let kills = std::env::var("TEGULA_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let mut acked_all: Vec<(String, String)> = Vec::new();
    for round in 0..kills {
        let s = Served::start(&img, &["--appendfsync", "always"]);
        // What every earlier round acknowledged reads back.
        let mut c = Client::connect(s.addr());
        for chunk in acked_all.chunks(256) {
            for (k, _) in chunk {
                c.send(&[b"GET", k.as_bytes()]).unwrap();
            }
            for (k, v) in chunk {
                let got = c.read().unwrap();
                assert!(
                    got == v.as_bytes(),
                    "round {round}: {k}, acknowledged before a kill -9, reads {:?}",
                    String::from_utf8_lossy(&got)
                );
            }
        }
        drop(c);
        let acked = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut writers = Vec::new();
        for w in 0..4 {
            let (acked, stop, addr) = (acked.clone(), stop.clone(), s.addr());
            writers.push(std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let depth = if w % 2 == 0 { 1 } else { 8 };
                let mut i = 0u64;
                'outer: while !stop.load(Ordering::Relaxed) {
                    let batch: Vec<(String, String)> = (i..i + depth)
                        .map(|j| {
                            (
                                format!("r{round}w{w}:{j}"),
                                format!("value-{round}-{w}-{j}-{}", "x".repeat((j % 50) as usize)),
                            )
                        })
                        .collect();
                    i += depth;
                    for (k, v) in &batch {
                        if c.send(&[b"SET", k.as_bytes(), v.as_bytes()]).is_err() {
                            break 'outer;
                        }
                    }
                    for kv in batch {
                        match c.read() {
                            Ok(r) if r == b"+OK" => acked.lock().unwrap().push(kv),
                            _ => break 'outer,
                        }
                    }
                }
            }));
        }
        std::thread::sleep(Duration::from_millis(300 + 37 * (round % 7)));
        s.signal(libc::SIGKILL);
        let (status, _) = s.wait();
        assert!(!status.success());
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
        let acked = std::mem::take(&mut *acked.lock().unwrap());
        assert!(!acked.is_empty(), "round {round}: nothing acknowledged");
        acked_all.extend(acked);
    }
    // The last round's SETs too, and the database and the store check out.
    let s = Served::start(&img, &[]);
    let mut c = Client::connect(s.addr());
    let mut lost = 0;
    for (k, v) in &acked_all {
        if c.cmd(&[b"GET", k.as_bytes()]) != v.as_bytes() {
            lost += 1;
        }
    }
    assert_eq!(
        lost,
        0,
        "{lost} of {} acknowledged SETs lost",
        acked_all.len()
    );
    drop(c);
    s.signal(libc::SIGTERM);
    assert!(s.wait().0.success());
    assert!(ok_out(&["db", "check", &img]).ends_with("ok\n"));
    eprintln!(
        "{kills} kills of serve resp on a KVIMR image: {} acknowledged SETs, none lost",
        acked_all.len()
    );
}
