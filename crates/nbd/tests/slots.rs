//! Connection slots (issue 33, item 10): a connection whose client has disconnected frees its
//! slot for the next client (967 of 2,000 quick reconnects were refused: each disconnect
//! queued a flush, and the finishing connections still held `max_connections`); and a server
//! full of idle connections lets a new client in by closing the one idle the longest (128 idle
//! connections locked every other client out for good).
#![allow(clippy::unwrap_used, missing_docs)]

mod raw;

use raw::*;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tegula_device::BlockDevice;
use tegula_nbd::{NbdClient, ServerOptions};

/// One quick cycle: connect, `NBD_OPT_GO`, optionally a 4 KiB write (so that the disconnect
/// has something to flush), `NBD_CMD_DISC`, close. Whether the server served it.
fn cycle(sock: &Path, write: bool) -> bool {
    let Ok(mut c) = UnixStream::connect(sock) else {
        return false;
    };
    if go(&mut c).is_none() {
        return false;
    }
    if write {
        let mut w = request(WRITE, 1, 1 << 20, 4096);
        w.extend_from_slice(&[0x5a; 4096]);
        if c.write_all(&w).is_err() || reply_error(&mut c) != Some(0) {
            return false;
        }
    }
    c.write_all(&request(DISC, 2, 0, 0)).is_ok()
}

/// Runs `n` cycles back to back; returns how many were turned away.
fn refused(sock: &Path, n: usize, write: bool) -> usize {
    let t0 = Instant::now();
    let refused = (0..n).filter(|_| !cycle(sock, write)).count();
    eprintln!(
        "{n} connect/negotiate/{}disconnect cycles in {:.2?}: {refused} refused",
        if write { "write/" } else { "" },
        t0.elapsed()
    );
    refused
}

/// 2,000 quick cycles with the default limit on a drive whose flush takes 2 ms (an image's
/// `fdatasync`): all served.
#[test]
fn two_thousand_quick_reconnects_are_all_served() {
    let dir = tempfile::tempdir().unwrap();
    let dev: Arc<dyn BlockDevice> = Arc::new(SlowFlush::new(Duration::from_millis(2)));
    let sock = serve_unix(dir.path(), dev, ServerOptions::default());
    assert_eq!(refused(&sock, 2000, false), 0);
}

/// With a single slot every new client arrives while the last one's connection is still
/// finishing; it waits for it instead of being turned away, also when the disconnect has a
/// 5 ms flush to do.
#[test]
fn a_single_slot_serves_back_to_back_clients() {
    let dir = tempfile::tempdir().unwrap();
    let dev: Arc<dyn BlockDevice> = Arc::new(SlowFlush::new(Duration::from_millis(5)));
    let opts = ServerOptions {
        max_connections: 1,
        ..ServerOptions::default()
    };
    let sock = serve_unix(dir.path(), dev, opts);
    assert_eq!(refused(&sock, 2000, false), 0);
    assert_eq!(refused(&sock, 300, true), 0);
    // Ending by closing the socket (no NBD_CMD_DISC) frees the slot too.
    for _ in 0..500 {
        let mut c = UnixStream::connect(&sock).unwrap();
        assert!(go(&mut c).is_some(), "turned away after an EOF disconnect");
    }
}

/// 128 idle negotiated connections (the default limit): a new client is turned away while they
/// have been idle for less than `evict_idle` (10 s), then let in by closing the connection
/// idle the longest — that one only.
#[test]
fn a_full_server_closes_its_longest_idle_connection_for_a_new_client() {
    let dir = tempfile::tempdir().unwrap();
    let opts = ServerOptions::default();
    let evict_after = opts.evict_idle.unwrap();
    assert_eq!(opts.max_connections, 128);
    let sock = serve_unix(dir.path(), Arc::new(disk()), opts);
    let t0 = Instant::now();
    let idle: Vec<UnixStream> = (0..128).map(|_| negotiated(&sock)).collect();

    let mut early = UnixStream::connect(&sock).unwrap();
    assert!(
        export_name(&mut early).is_none(),
        "a 129th client was served while the others had been idle for {:?}",
        t0.elapsed()
    );

    std::thread::sleep((t0 + evict_after + Duration::from_millis(200)) - Instant::now());
    let mut c = NbdClient::connect(&uri(&sock)).expect("a new client of a full server");
    c.write(0, &[7u8; 4096], true).unwrap();
    let mut back = vec![0u8; 4096];
    c.read(0, &mut back).unwrap();
    assert_eq!(back, vec![7u8; 4096]);
    eprintln!(
        "a new client got in {:.2?} after 128 idle connections were opened",
        t0.elapsed()
    );
    let closed: Vec<usize> = (0..idle.len()).filter(|&i| hung_up(&idle[i])).collect();
    assert_eq!(
        closed,
        vec![0],
        "exactly the connection idle the longest is closed"
    );
    c.disconnect().unwrap();
}

/// `evict_idle: None` keeps the old behaviour: a full server turns new clients away.
#[test]
fn without_eviction_a_full_server_turns_new_clients_away() {
    let dir = tempfile::tempdir().unwrap();
    let opts = ServerOptions {
        max_connections: 4,
        evict_idle: None,
        ..ServerOptions::default()
    };
    let sock = serve_unix(dir.path(), Arc::new(disk()), opts);
    let idle: Vec<UnixStream> = (0..4).map(|_| negotiated(&sock)).collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut c = UnixStream::connect(&sock).unwrap();
    assert!(export_name(&mut c).is_none());
    assert!(idle.iter().all(|s| !hung_up(s)));
}
