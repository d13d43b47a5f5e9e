//! The server under hostile clients: thousands of connections that never negotiate, clients
//! that ask for large reads and never read the replies, and `accept()` failing for lack of file
//! descriptors. The server must stay up, bound its threads, descriptors and memory, and serve
//! an honest client afterwards.
#![allow(clippy::unwrap_used, missing_docs)]

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tegula_device::{profile, BlockDevice, Disk};
use tegula_nbd::{Listener, NbdClient, ServerOptions};

fn serve(dir: &Path, opts: ServerOptions) -> PathBuf {
    let mut cfg = profile("cmr-7200").unwrap();
    cfg.capacity = 1 << 30;
    let dev: Arc<dyn BlockDevice> = Arc::new(Disk::in_memory(cfg).unwrap());
    let sock = dir.join("d.sock");
    let l = Listener::unix(&sock).unwrap();
    std::thread::spawn(move || l.serve(dev, opts));
    sock
}

fn uri(sock: &Path) -> String {
    format!("nbd+unix:///?socket={}", sock.display())
}

/// The tests of this binary run one at a time (they count threads and memory of the process).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Connection threads of the servers in this process (named `nbd-conn`).
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|c| c.trim() == "nbd-conn")
        .count()
}

/// Resident set size of this process in bytes.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// An honest client works: write, flush, read back.
fn honest_client_works(sock: &Path) {
    let t0 = Instant::now();
    let mut c = loop {
        match NbdClient::connect(&uri(sock)) {
            Ok(c) => break c,
            Err(e) => {
                assert!(t0.elapsed() < Duration::from_secs(20), "no service: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    let data = vec![0x5au8; 8192];
    c.write(1 << 20, &data, false).unwrap();
    c.flush().unwrap();
    let mut back = vec![0u8; 8192];
    c.read(1 << 20, &mut back).unwrap();
    assert_eq!(back, data);
    c.disconnect().unwrap();
}

/// Regression: `serve nbd` spent a thread and two descriptors per connection with no limit and
/// no timeout. 2,000 connections that never negotiate: at most `max_connections` are served at
/// once, the rest are closed, the silent ones time out, and an honest client gets through.
#[test]
fn thousands_of_idle_connections_are_bounded_and_time_out() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let opts = ServerOptions {
        max_connections: 32,
        handshake_timeout: Duration::from_millis(500),
        ..ServerOptions::default()
    };
    let sock = serve(dir.path(), opts);
    let mut idle = Vec::new();
    for _ in 0..2000 {
        if let Ok(s) = UnixStream::connect(&sock) {
            idle.push(s);
        }
        if idle.len() % 200 == 0 {
            assert!(
                threads() <= 32,
                "{} threads for {} idle connections",
                threads(),
                idle.len()
            );
        }
    }
    assert!(threads() <= 32);
    // The silent connections are dropped after the handshake timeout, freeing their slots.
    std::thread::sleep(Duration::from_millis(1500));
    honest_client_works(&sock);
    drop(idle);
}

/// Regression: a client that stops reading pinned a 32 MiB buffer (100 such clients took
/// 3.4 GB). Now reads stream in 1 MiB pieces and a client that does not read for the write
/// timeout is disconnected.
#[test]
fn clients_that_stop_reading_hold_little_memory_and_are_dropped() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let opts = ServerOptions {
        max_connections: 200,
        write_timeout: Duration::from_secs(1),
        ..ServerOptions::default()
    };
    let sock = serve(dir.path(), opts);
    let base = rss();
    let mut stuck = Vec::new();
    for _ in 0..100 {
        let mut c = UnixStream::connect(&sock).unwrap();
        // Fixed newstyle, NBD_OPT_EXPORT_NAME "" (no reply to read but the export data).
        let mut greet = [0u8; 18];
        std::io::Read::read_exact(&mut c, &mut greet).unwrap();
        let mut req = Vec::new();
        req.extend_from_slice(&3u32.to_be_bytes()); // fixed newstyle + no zeroes
        req.extend_from_slice(&0x4948_4156_454f_5054u64.to_be_bytes());
        req.extend_from_slice(&1u32.to_be_bytes());
        req.extend_from_slice(&0u32.to_be_bytes());
        // Then four 32 MiB reads it will never read.
        for i in 0..4u64 {
            req.extend_from_slice(&0x2560_9513u32.to_be_bytes());
            req.extend_from_slice(&0u16.to_be_bytes());
            req.extend_from_slice(&0u16.to_be_bytes());
            req.extend_from_slice(&i.to_be_bytes());
            req.extend_from_slice(&(i * (32 << 20)).to_be_bytes());
            req.extend_from_slice(&(32u32 << 20).to_be_bytes());
        }
        c.write_all(&req).unwrap();
        stuck.push(c);
    }
    std::thread::sleep(Duration::from_millis(500));
    let grown = rss().saturating_sub(base);
    assert!(
        grown < 900 << 20,
        "100 non-reading clients grew the server by {} MiB",
        grown >> 20
    );
    // After the write timeout they are gone and an honest client is served.
    std::thread::sleep(Duration::from_secs(2));
    honest_client_works(&sock);
    drop(stuck);
}
