//! `kill -9` of `tegula serve nbd` on dm-smr and drive-managed IMR images, with exact
//! accounting. A client
//! (`tegula_nbd::NbdClient`, one request at a time) writes patterned 4 KiB blocks (some
//! several blocks long, some FUA) and FLUSHes; the server process is killed with SIGKILL at a
//! random point — between requests, or while a write or a FLUSH is in flight — and restarted.
//! A reference model keeps, per block, the values it may read back as: the durable one (a
//! write acknowledged with the volatile cache off or with FUA, or covered by an acknowledged
//! FLUSH) and those written after it. After every restart every block must read back as one of
//! its candidates — a durable block exactly, any other as old or new data, never garbage and
//! never an error — and what it reads becomes durable. At the end the server is stopped with
//! SIGTERM and the image checks clean (`DmDrive::check`; on dm-imr, no top track holding data
//! is damaged).
//!
//! Drive kinds: journal with the volatile cache off and on, set-associative, fully
//! associative, and drive-managed IMR (write cache on: its RMWs cross the kills). The default run makes a few hundred kills (about a minute in a debug build);
//! `TEGULA_SOAK=1` makes ten times as many, with longer runs between kills.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tegula_device::{BlockDevice, Disk, OpenOptions};
use tegula_dmimr::{DmImr, FormatOptions};
use tegula_nbd::NbdClient;
use tegula_stl::{DmConfig, DmDrive};

// The stl crash tests' support: the soak switch, the tiny drive and the crash model
// (patterned blocks, candidate versions).
#[path = "../../stl/tests/common/mod.rs"]
mod stl_common;

use stl_common::crash_model::{pattern, Model, BLOCK as BS};
use stl_common::{soak, tiny_config};

/// A small drive of `stl` (4 MiB bands of two tracks, so that shingling bites; a 12 MiB cache,
/// so that cleaning runs all the time) that keeps its data.
fn config(stl: &str, extra: &str) -> String {
    tiny_config("32MiB", stl, &format!("store_data = true\n{extra}")).to_toml()
}

/// One request of the workload.
#[derive(Debug, Clone)]
enum Op {
    Write {
        first: u64,
        versions: Vec<u32>,
        fua: bool,
    },
    Flush,
}

fn run(client: &mut NbdClient, op: &Op) -> bool {
    match op {
        Op::Write {
            first,
            versions,
            fua,
        } => {
            let mut data = Vec::with_capacity(versions.len() * BS);
            for (k, &v) in versions.iter().enumerate() {
                data.extend_from_slice(&pattern(first + k as u64, v));
            }
            client.write(first * BS as u64, &data, *fua).is_ok()
        }
        Op::Flush => client.flush().is_ok(),
    }
}

fn account(m: &mut Model, op: &Op, acked: bool, cache: bool) {
    match op {
        Op::Write {
            first,
            versions,
            fua,
        } => m.written(*first, versions, acked, *fua || !cache),
        Op::Flush if acked => m.flushed(),
        Op::Flush => {}
    }
}

/// A running `tegula serve nbd` and a client connected to it.
struct Server {
    child: Child,
    client: NbdClient,
}

fn start(img: &Path, sock: &Path, log: &Path) -> Server {
    let err = File::options()
        .create(true)
        .append(true)
        .open(log)
        .expect("server log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tegula"))
        .args(["serve", "nbd", "--socket"])
        .arg(sock)
        .arg(img)
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .expect("spawn tegula serve nbd");
    let uri = format!("nbd+unix:///?socket={}", sock.display());
    let t0 = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "tegula serve nbd exited ({status}) before serving: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        if sock.exists() {
            if let Ok(client) = NbdClient::connect(&uri) {
                return Server { child, client };
            }
        }
        // A server that never comes up is a failure, not a slow machine: wait long.
        if t0.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!("tegula serve nbd did not come up");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn kill9(child: &mut Child) {
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
}

/// Reads every block of the model through `client` and settles it.
fn verify(client: &mut NbdClient, m: &mut Model, what: &str) -> u64 {
    const CHUNK: u64 = 64;
    let n = m.cands.len() as u64;
    let mut buf = vec![0u8; CHUNK as usize * BS];
    let mut blk = 0;
    while blk < n {
        let k = CHUNK.min(n - blk);
        let b = &mut buf[..k as usize * BS];
        if let Err(e) = client.read(blk * BS as u64, b) {
            panic!("{what}: read of blocks {blk}..{}: {e}", blk + k);
        }
        for i in 0..k {
            let s = i as usize * BS;
            m.settle(blk + i, &b[s..s + BS], what);
        }
        blk += k;
    }
    n
}

/// Counts for the summary line.
#[derive(Default)]
struct Tally {
    kills: u64,
    mid_write: u64,
    mid_flush: u64,
    acked_anyway: u64,
    blocks: u64,
    requests: u64,
}

/// The drive a kill test serves.
enum Drive<'a> {
    /// A dm-smr drive of this TOML configuration.
    DmSmr(&'a str),
    /// A drive-managed IMR drive: 64 MiB of the `imr` profile, write cache on.
    DmImr,
}

impl Drive<'_> {
    /// Creates the image; returns its 4 KiB blocks and whether its write cache is on.
    fn create(&self, img: &Path) -> (u64, bool) {
        match self {
            Drive::DmSmr(text) => {
                let cfg = DmConfig::from_toml(text).expect("config");
                let cache = cfg.volatile_cache;
                let d = DmDrive::create_image(img, cfg).expect("create");
                let blocks = d.info().capacity_sectors * d.info().sector_size as u64 / BS as u64;
                d.close().expect("close");
                (blocks, cache)
            }
            Drive::DmImr => {
                let mut cfg = tegula_device::profile("imr").expect("profile");
                cfg.capacity = 64 << 20;
                cfg.zones.zone_size = 16 << 20;
                let raw = Disk::create_image(img, cfg).expect("create");
                let opts = FormatOptions {
                    staging_bytes: 12 << 20,
                };
                let d = DmImr::format(Arc::new(raw), opts).expect("format");
                let blocks = d.info().capacity_sectors * d.info().sector_size as u64 / BS as u64;
                d.close().expect("close");
                (blocks, true)
            }
        }
    }

    /// Checks the stopped image and opens it read-only for the offline reads.
    fn check_and_open(&self, img: &Path, kind: &str) -> Box<dyn BlockDevice> {
        match self {
            Drive::DmSmr(_) => {
                let report = DmDrive::check(img).expect("check");
                assert!(
                    report.is_clean(),
                    "{kind}: check found {:?}",
                    report.findings
                );
                Box::new(DmDrive::open_image(img, true).expect("open"))
            }
            Drive::DmImr => {
                let ro = OpenOptions {
                    read_only: true,
                    mmap_reads: false,
                };
                let raw = Disk::open_image(img, ro).expect("open");
                let d = DmImr::open(Arc::new(raw)).expect("open the layer");
                assert!(d.open_warnings().is_empty(), "{:?}", d.open_warnings());
                assert!(
                    d.damaged_valid_tops().is_empty(),
                    "{kind}: tops holding data are damaged: {:?}",
                    d.damaged_valid_tops()
                );
                Box::new(d)
            }
        }
    }
}

/// `kills` cycles of: start the server, verify every block, run a random workload, kill it
/// (between requests, or with a request in flight).
fn kill_cycles(kind: &str, drive: Drive<'_>, seed: u64, kills: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let img = dir.path().join("drive.img");
    let sock: PathBuf = dir.path().join("nbd.sock");
    let log = dir.path().join("server.log");
    let (blocks, cache) = drive.create(&img);
    let mut m = Model::new(blocks as usize);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut t = Tally::default();
    let max_ops = if soak() { 120 } else { 30 };
    for cycle in 0..kills {
        let what = format!("{kind}: restart {cycle}");
        let mut s = start(&img, &sock, &log);
        t.blocks += verify(&mut s.client, &mut m, &what);
        let ops = rng.gen_range(1..=max_ops);
        // The request the kill hits (none: after the last one, between requests).
        let hit = rng.gen_bool(0.6).then(|| rng.gen_range(0..ops));
        for i in 0..ops {
            let op = if rng.gen_bool(0.15) {
                Op::Flush
            } else {
                let n = if rng.gen_bool(0.1) {
                    rng.gen_range(2..=64u64)
                } else {
                    1
                };
                let first = rng.gen_range(0..blocks - n);
                let versions = (0..n).map(|_| m.next_version()).collect();
                Op::Write {
                    first,
                    versions,
                    fua: rng.gen_bool(0.1),
                }
            };
            t.requests += 1;
            if hit == Some(i) {
                // Kill while the request is (most likely) under way.
                let delay = Duration::from_micros(rng.gen_range(0..3000));
                let client = &mut s.client;
                let child = &mut s.child;
                let acked = std::thread::scope(|sc| {
                    let h = sc.spawn(|| run(client, &op));
                    std::thread::sleep(delay);
                    kill9(child);
                    h.join().unwrap_or(false)
                });
                account(&mut m, &op, acked, cache);
                match (&op, acked) {
                    (_, true) => t.acked_anyway += 1,
                    (Op::Flush, false) => t.mid_flush += 1,
                    (Op::Write { .. }, false) => t.mid_write += 1,
                }
                break;
            }
            assert!(
                run(&mut s.client, &op),
                "{what}: request {i} ({op:?}) failed"
            );
            account(&mut m, &op, true, cache);
        }
        if hit.is_none() {
            kill9(&mut s.child);
        }
        t.kills += 1;
    }
    // The last restart, then an orderly stop: everything acknowledged is durable.
    let mut s = start(&img, &sock, &log);
    t.blocks += verify(&mut s.client, &mut m, &format!("{kind}: last restart"));
    drop(s.client);
    // SAFETY: signalling a child process this test started and has not reaped.
    let r = unsafe { libc::kill(s.child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(r, 0, "SIGTERM");
    let status = s.child.wait().expect("wait");
    assert!(status.success(), "{kind}: serve nbd stopped with {status}");
    let d = drive.check_and_open(&img, kind);
    let mut buf = vec![0u8; BS];
    for blk in 0..blocks {
        d.read(blk * (BS as u64 / d.info().sector_size as u64), &mut buf)
            .unwrap_or_else(|e| panic!("{kind}: offline read of block {blk}: {e}"));
        m.settle(blk, &buf, &format!("{kind}: offline after SIGTERM"));
    }
    eprintln!(
        "kill9 {kind}: {} kills ({} with a write in flight, {} with a FLUSH in flight, {} whose \
         request completed first), {} requests, {} blocks checked",
        t.kills, t.mid_write, t.mid_flush, t.acked_anyway, t.requests, t.blocks
    );
}

fn kills(n: usize) -> usize {
    if soak() {
        n * 10
    } else {
        n
    }
}

#[test]
fn kill9_journal_without_write_cache_loses_no_acknowledged_write() {
    kill_cycles(
        "journal",
        Drive::DmSmr(&config("journal", "")),
        91,
        kills(60),
    );
}

#[test]
fn kill9_journal_with_write_cache_loses_no_flushed_write() {
    let extra =
        "volatile_cache = true\nvolatile_cache_size = \"256KiB\"\nbypass_min = \"128KiB\"\n";
    kill_cycles(
        "journal + write cache",
        Drive::DmSmr(&config("journal", extra)),
        92,
        kills(60),
    );
}

#[test]
fn kill9_set_associative_loses_no_acknowledged_write() {
    kill_cycles(
        "set-associative",
        Drive::DmSmr(&config("set-associative", "")),
        93,
        kills(60),
    );
}

#[test]
fn kill9_fully_associative_loses_no_acknowledged_write() {
    kill_cycles(
        "fully-associative",
        Drive::DmSmr(&config("fully-associative", "")),
        94,
        kills(60),
    );
}

#[test]
fn kill9_drive_managed_imr_loses_no_flushed_write() {
    kill_cycles("dm-imr", Drive::DmImr, 95, kills(60));
}
