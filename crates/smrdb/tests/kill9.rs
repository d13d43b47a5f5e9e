//! `kill -9` of a real process writing through SMRDB, on the two devices whose data lives in
//! files (a banded plain file, zone files): every write the child acknowledged (printed after
//! `put` returned) reads back after the kill, over several rounds, each followed by a second
//! kill of a process that has just recovered from the first. The child is this same
//! test binary, run again with `SMRDB_KILL9_CHILD` naming the device; its writes are unsynced
//! but for one in 500, so what survives is what `Options::log_write_through` handed over (on
//! by default on both: their writes go to the page cache).
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tegula_device::{HostBanded, HostBandedOptions, ZoneFiles, ZoneFilesOptions, ZonedDevice};
use tegula_smrdb::{Db, Mode, Options, WriteBatch, WriteOptions};

const CHILD: &str = "SMRDB_KILL9_CHILD";
const TEST: &str = "kill_9_of_a_writing_process_loses_nothing_acknowledged";

fn device(kind: &str, path: &Path) -> Arc<dyn ZonedDevice> {
    match kind {
        "banded" => Arc::new(
            HostBanded::open(
                path,
                HostBandedOptions {
                    zone_size: 1 << 20,
                    capacity: Some(48 << 20),
                    ..HostBandedOptions::default()
                },
            )
            .unwrap(),
        ),
        "zone-files" => Arc::new(
            ZoneFiles::open(
                path,
                ZoneFilesOptions {
                    zone_size: 1 << 20,
                    capacity: Some(48 << 20),
                    ..ZoneFilesOptions::default()
                },
            )
            .unwrap(),
        ),
        other => panic!("unknown device kind {other}"),
    }
}

/// Small memtables and log bands, so that a round crosses log bands and memtable flushes;
/// compactions on their own thread, as a server runs them.
fn opts() -> Options {
    Options {
        background_compaction: true,
        ..tiny_opts()
    }
}

/// The acknowledgement a line of the child's output carries: its last word, a number (the
/// first shares its line with the test harness's `test NAME ... `).
fn ack(line: &str) -> Option<u64> {
    line.rsplit(' ').next()?.parse().ok()
}

fn value_of(round: u64, i: u64) -> Vec<u8> {
    let mut v = format!("r{round}-{i}-").into_bytes();
    v.resize(20 + (i * 37 % 300) as usize, b'a' + (i % 26) as u8);
    v
}

/// The child: writes keys `round:i` until killed, printing each `i` once acknowledged; or,
/// for a spec starting `reopen,`, opens the database (recovering what the last kill left),
/// prints `opened` and waits to be killed.
fn child(spec: &str) {
    let reopen = spec.starts_with("reopen,");
    let spec = spec.strip_prefix("reopen,").unwrap_or(spec);
    let mut it = spec.splitn(3, ',');
    let (kind, round, path) = (
        it.next().unwrap(),
        it.next().unwrap().parse::<u64>().unwrap(),
        it.next().unwrap(),
    );
    let db = Db::open(device(kind, Path::new(path)), opts()).unwrap();
    assert!(
        db.log_write_through(),
        "{kind}: the default writes the log through"
    );
    let out = std::io::stdout();
    let mut out = out.lock();
    if reopen {
        writeln!(out, "opened").unwrap();
        out.flush().unwrap();
        std::thread::sleep(Duration::from_secs(600));
        return;
    }
    for i in 0.. {
        let k = format!("{round}:{i:07}").into_bytes();
        let v = value_of(round, i);
        if i % 500 == 499 {
            let mut b = WriteBatch::default();
            b.put(&k, &v);
            let sync = WriteOptions {
                sync: true,
                ..WriteOptions::default()
            };
            db.write(b, sync).unwrap();
        } else {
            db.put(&k, &v).unwrap();
        }
        writeln!(out, "{i}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn kill_9_of_a_writing_process_loses_nothing_acknowledged() {
    if let Ok(spec) = std::env::var(CHILD) {
        child(&spec);
        return;
    }
    for kind in ["banded", "zone-files"] {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join(kind);
        let db = Db::create(device(kind, &path), format(Mode::Soc), opts()).unwrap();
        db.close().unwrap();
        let mut acked: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for round in 0..5u64 {
            let mut c = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", TEST, "--nocapture", "--test-threads", "1"])
                .env(CHILD, format!("{kind},{round},{}", path.display()))
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap();
            let mut lines = BufReader::new(c.stdout.take().unwrap()).lines();
            // Kill at a point that moves from round to round: after a number of
            // acknowledgements or a time, whichever comes first.
            let (want, t0) = (300 + round * 1700, Instant::now());
            let mut n = 0u64;
            while n < want && t0.elapsed() < Duration::from_secs(20) {
                let Some(Ok(line)) = lines.next() else { break };
                if let Some(i) = ack(&line) {
                    acked.insert(format!("{round}:{i:07}").into_bytes(), value_of(round, i));
                    n += 1;
                }
            }
            c.kill().unwrap(); // SIGKILL
                               // Acknowledgements the child printed before it died count too.
            for line in lines.map_while(Result::ok) {
                if let Some(i) = ack(&line) {
                    acked.insert(format!("{round}:{i:07}").into_bytes(), value_of(round, i));
                }
            }
            c.wait().unwrap();
            assert!(
                n > 100,
                "{kind} round {round}: the child acknowledged only {n} writes"
            );
            // A second crash right after the recovery of the first (before any write).
            let mut c = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", TEST, "--nocapture", "--test-threads", "1"])
                .env(CHILD, format!("reopen,{kind},{round},{}", path.display()))
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap();
            let mut lines = BufReader::new(c.stdout.take().unwrap()).lines();
            let opened = lines.any(|l| l.is_ok_and(|l| l.ends_with("opened")));
            c.kill().unwrap();
            c.wait().unwrap();
            assert!(
                opened,
                "{kind} round {round}: the reopening child did not open"
            );
            let db = Db::open(device(kind, &path), opts()).unwrap();
            let lost: Vec<String> = acked
                .iter()
                .filter(|(k, v)| db.get(k).unwrap().as_ref() != Some(*v))
                .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
                .collect();
            assert!(
                lost.is_empty(),
                "{kind} round {round}: {} of {} acknowledged writes lost after kill -9: {:?}",
                lost.len(),
                acked.len(),
                &lost[..lost.len().min(8)]
            );
            assert!(db.check().unwrap().is_ok());
            db.close().unwrap();
        }
    }
}
