//! `tegula serve nbd`'s connection limits end to end (issue 33, item 10), on a disk image
//! (whose flush is a real `fdatasync`): 2,000 quick connect/negotiate/disconnect cycles are
//! all served, with the default limit and with a single slot (967 of 2,000 were refused: the
//! connections they ended still counted); `nbdinfo` back to back on a single slot; the idle
//! timeout (`--idle-timeout`, on by default, 0 disables) and the eviction of the longest-idle
//! connection for a new client when the server is full (`--evict-idle`).
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::{have, image, skip, tegula_cmd, wait_for};
use std::io::{Read, Write};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `tegula serve nbd`, stopped with SIGTERM when dropped.
struct Server {
    child: Child,
    sock: PathBuf,
}

impl Server {
    fn start(dir: &Path, img: &str, extra: &[&str]) -> Server {
        let sock = dir.join("s.sock");
        let child = tegula_cmd()
            .args(["serve", "nbd", "--socket"])
            .arg(&sock)
            .args(extra)
            .arg(img)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for(&sock, 20);
        Server { child, sock }
    }

    /// Stops the server; its standard error.
    fn stop(mut self) -> String {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().unwrap();
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            e.read_to_string(&mut err).unwrap();
        }
        assert!(status.success(), "{err}");
        err
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn recv(s: &mut UnixStream, n: usize) -> Option<Vec<u8>> {
    let mut b = vec![0u8; n];
    s.read_exact(&mut b).ok().map(|_| b)
}

/// The greeting and NBD_OPT_GO for the default export, as libnbd does it; `None` when the
/// server closed the connection (turned the client away).
fn go(s: &mut UnixStream) -> Option<()> {
    const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
    recv(s, 18)?;
    let mut req = 1u32.to_be_bytes().to_vec();
    req.extend_from_slice(&IHAVEOPT.to_be_bytes());
    req.extend_from_slice(&7u32.to_be_bytes());
    req.extend_from_slice(&6u32.to_be_bytes());
    req.extend_from_slice(&[0u8; 6]);
    s.write_all(&req).ok()?;
    loop {
        let h = recv(s, 20)?;
        let len = u32::from_be_bytes([h[16], h[17], h[18], h[19]]) as usize;
        recv(s, len)?;
        if h[15] == 1 {
            return Some(()); // NBD_REP_ACK
        }
    }
}

/// NBD_CMD_DISC.
fn disc(s: &mut UnixStream) -> bool {
    let mut r = 0x2560_9513u32.to_be_bytes().to_vec();
    r.extend_from_slice(&0u16.to_be_bytes());
    r.extend_from_slice(&2u16.to_be_bytes());
    r.extend_from_slice(&[0u8; 20]);
    s.write_all(&r).is_ok()
}

/// `n` quick cycles (connect, NBD_OPT_GO, NBD_CMD_DISC, close); how many were turned away.
fn refused_cycles(sock: &Path, n: usize) -> usize {
    let t0 = Instant::now();
    let refused = (0..n)
        .filter(|_| {
            let Ok(mut c) = UnixStream::connect(sock) else {
                return true;
            };
            go(&mut c).is_none() || !disc(&mut c)
        })
        .count();
    eprintln!(
        "{n} connect/NBD_OPT_GO/NBD_CMD_DISC cycles in {:.2?}: {refused} refused",
        t0.elapsed()
    );
    refused
}

/// Waits up to `limit` for the server to hang up, reading nothing.
fn hangup_within(s: &UnixStream, limit: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    let mut p = libc::pollfd {
        fd: s.as_raw_fd(),
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one pollfd on a descriptor we own, for the duration of the call.
    let n = unsafe { libc::poll(&mut p, 1, limit.as_millis() as libc::c_int) };
    (n > 0).then(|| t0.elapsed())
}

fn negotiated(sock: &Path) -> UnixStream {
    let mut c = UnixStream::connect(sock).unwrap();
    go(&mut c).expect("turned away");
    c
}

fn cmr_image(dir: &Path) -> String {
    image(dir, "d.img", "cmr-7200", "1GiB", &[])
}

#[test]
fn quick_reconnects_are_all_served_with_the_default_limit_and_a_single_slot() {
    let dir = tempfile::tempdir().unwrap();
    let img = cmr_image(dir.path());
    let s = Server::start(dir.path(), &img, &[]);
    assert_eq!(refused_cycles(&s.sock, 2000), 0);
    let err = s.stop();
    assert!(!err.contains("closing a new one"), "{err}");

    let s = Server::start(dir.path(), &img, &["--max-connections", "1"]);
    assert_eq!(refused_cycles(&s.sock, 2000), 0);
    if have("nbdinfo") {
        let uri = format!("nbd+unix:///?socket={}", s.sock.display());
        let t0 = Instant::now();
        let failed = (0..2000)
            .filter(|_| {
                !Command::new("nbdinfo")
                    .arg("--size")
                    .arg(&uri)
                    .output()
                    .unwrap()
                    .status
                    .success()
            })
            .count();
        eprintln!(
            "2000 nbdinfo runs on --max-connections 1 in {:.2?}: {failed} failed",
            t0.elapsed()
        );
        assert_eq!(failed, 0);
    } else {
        skip("nbdinfo is not installed (apt install libnbd-bin): raw cycles only");
    }
    s.stop();
}

#[test]
fn the_start_line_states_the_limits() {
    let dir = tempfile::tempdir().unwrap();
    let img = cmr_image(dir.path());
    let err = Server::start(dir.path(), &img, &[]).stop();
    assert!(
        err.contains(
            "connections: at most 128, closed after 300 s idle (--idle-timeout 0: never); when \
             all are taken, one idle for 10 s or more is closed for a new client; a client not \
             reading its replies is dropped after 30 s"
        ),
        "{err}"
    );
}

#[test]
fn idle_timeout_closes_idle_connections_and_zero_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let img = cmr_image(dir.path());
    let s = Server::start(dir.path(), &img, &["--idle-timeout", "1"]);
    let c = negotiated(&s.sock);
    let t = hangup_within(&c, Duration::from_secs(5)).expect("idle connection kept");
    eprintln!("--idle-timeout 1: closed after {t:.2?}");
    assert!(t >= Duration::from_millis(900) && t <= Duration::from_millis(1800));
    s.stop();

    let s = Server::start(dir.path(), &img, &["--idle-timeout", "0"]);
    let c = negotiated(&s.sock);
    assert_eq!(hangup_within(&c, Duration::from_secs(2)), None);
    s.stop();
}

#[test]
fn a_full_server_closes_the_longest_idle_connection_for_a_new_client() {
    let dir = tempfile::tempdir().unwrap();
    let img = cmr_image(dir.path());
    let s = Server::start(
        dir.path(),
        &img,
        &["--max-connections", "3", "--evict-idle", "1"],
    );
    let held: Vec<UnixStream> = (0..3)
        .map(|_| {
            let c = negotiated(&s.sock);
            std::thread::sleep(Duration::from_millis(50));
            c
        })
        .collect();
    // Idle for less than --evict-idle: the new client is turned away.
    let mut early = UnixStream::connect(&s.sock).unwrap();
    assert!(go(&mut early).is_none(), "served while all slots were busy");
    std::thread::sleep(Duration::from_millis(1200));
    let mut late = UnixStream::connect(&s.sock).unwrap();
    assert!(go(&mut late).is_some(), "not let in after --evict-idle");
    let closed: Vec<usize> = (0..3)
        .filter(|&i| hangup_within(&held[i], Duration::ZERO).is_some())
        .collect();
    assert_eq!(closed, vec![0], "the longest-idle connection, only it");
    let err = s.stop();
    assert!(err.contains("closing a new one"), "{err}");

    // --evict-idle 0: a full server turns new clients away, however long the others idle.
    let s = Server::start(
        dir.path(),
        &img,
        &["--max-connections", "1", "--evict-idle", "0"],
    );
    let _held = negotiated(&s.sock);
    std::thread::sleep(Duration::from_millis(1200));
    let mut c = UnixStream::connect(&s.sock).unwrap();
    assert!(go(&mut c).is_none());
    s.stop();
}
