//! A raw-socket NBD client for the limit tests: negotiation by hand, requests built byte by
//! byte, and a way to see that the server hung up without reading anything (poll for
//! `POLLRDHUP`), so that a client can "never read its replies" and still be timed.
#![allow(dead_code, clippy::unwrap_used)] // each test binary uses a different subset

use std::io::{Read, Write};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tegula_device::{
    profile, BlockDevice, Completion, DeviceInfo, Disk, IoDone, Nanos, Request, WriteFlags,
};
use tegula_nbd::{Listener, ServerOptions};

/// `IHAVEOPT`, the option magic.
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Request magic.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Command types.
pub const READ: u16 = 0;
/// Write.
pub const WRITE: u16 = 1;
/// Disconnect.
pub const DISC: u16 = 2;
/// Flush.
pub const FLUSH: u16 = 3;

/// A 1 GiB in-memory CMR drive.
pub fn disk() -> Disk {
    let mut cfg = profile("cmr-7200").unwrap();
    cfg.capacity = 1 << 30;
    Disk::in_memory(cfg).unwrap()
}

/// A drive whose FLUSH takes `flush_delay` of wall time (as an image's `fdatasync` does).
pub struct SlowFlush {
    inner: Disk,
    flush_delay: Duration,
}

impl SlowFlush {
    /// A 1 GiB CMR drive with slow flushes.
    pub fn new(flush_delay: Duration) -> SlowFlush {
        SlowFlush {
            inner: disk(),
            flush_delay,
        }
    }
}

impl BlockDevice for SlowFlush {
    fn info(&self) -> DeviceInfo {
        self.inner.info()
    }
    fn read(&self, lba: u64, buf: &mut [u8]) -> tegula_device::Result<IoDone> {
        self.inner.read(lba, buf)
    }
    fn write_with(&self, lba: u64, data: &[u8], f: WriteFlags) -> tegula_device::Result<IoDone> {
        self.inner.write_with(lba, data, f)
    }
    fn flush(&self) -> tegula_device::Result<IoDone> {
        std::thread::sleep(self.flush_delay);
        self.inner.flush()
    }
    fn discard(&self, lba: u64, sectors: u64) -> tegula_device::Result<IoDone> {
        self.inner.discard(lba, sectors)
    }
    fn submit(&self, reqs: Vec<Request>) -> Vec<tegula_device::Result<Completion>> {
        self.inner.submit(reqs)
    }
    fn now(&self) -> Nanos {
        self.inner.now()
    }
    fn idle(&self, d: Nanos) {
        self.inner.idle(d)
    }
}

/// Serves `dev` on a Unix socket in `dir` from a background thread; returns the socket path.
pub fn serve_unix(dir: &Path, dev: Arc<dyn BlockDevice>, opts: ServerOptions) -> PathBuf {
    let sock = dir.join("d.sock");
    let l = Listener::unix(&sock).unwrap();
    std::thread::spawn(move || l.serve(dev, opts));
    sock
}

/// Serves `dev` on a loopback TCP port from a background thread; returns `HOST:PORT`.
pub fn serve_tcp(dev: Arc<dyn BlockDevice>, opts: ServerOptions) -> String {
    let l = Listener::tcp("127.0.0.1:0").unwrap();
    let addr = l.describe().trim_start_matches("nbd://").to_string();
    std::thread::spawn(move || l.serve(dev, opts));
    addr
}

/// The `nbd+unix` URI of a socket.
pub fn uri(sock: &Path) -> String {
    format!("nbd+unix:///?socket={}", sock.display())
}

/// Reads exactly `n` bytes; `None` when the server closed (or reset) the connection first.
pub fn recv(s: &mut impl Read, n: usize) -> Option<Vec<u8>> {
    let mut b = vec![0u8; n];
    s.read_exact(&mut b).ok().map(|_| b)
}

/// The greeting and `NBD_OPT_EXPORT_NAME` (no reply to parse but the export's size and
/// flags). `None` when the server closed the connection (turned the client away).
pub fn export_name(s: &mut (impl Read + Write)) -> Option<()> {
    recv(s, 18)?;
    let mut req = 3u32.to_be_bytes().to_vec(); // fixed newstyle + no zeroes
    req.extend_from_slice(&IHAVEOPT.to_be_bytes());
    req.extend_from_slice(&1u32.to_be_bytes());
    req.extend_from_slice(&0u32.to_be_bytes());
    s.write_all(&req).ok()?;
    recv(s, 10).map(|_| ())
}

/// The greeting and `NBD_OPT_GO` for the default export, as libnbd (`nbdinfo`) does it.
/// `None` when the server closed the connection.
pub fn go(s: &mut (impl Read + Write)) -> Option<()> {
    recv(s, 18)?;
    let data = [0u8; 6]; // name length 0, no information requests
    let mut req = 1u32.to_be_bytes().to_vec(); // fixed newstyle
    req.extend_from_slice(&IHAVEOPT.to_be_bytes());
    req.extend_from_slice(&7u32.to_be_bytes());
    req.extend_from_slice(&(data.len() as u32).to_be_bytes());
    req.extend_from_slice(&data);
    s.write_all(&req).ok()?;
    loop {
        let h = recv(s, 20)?;
        let kind = u32::from_be_bytes([h[12], h[13], h[14], h[15]]);
        let len = u32::from_be_bytes([h[16], h[17], h[18], h[19]]) as usize;
        recv(s, len)?;
        if kind == 1 {
            return Some(()); // NBD_REP_ACK
        }
    }
}

/// A request header.
pub fn request(kind: u16, handle: u64, offset: u64, length: u32) -> Vec<u8> {
    let mut r = REQUEST_MAGIC.to_be_bytes().to_vec();
    r.extend_from_slice(&0u16.to_be_bytes());
    r.extend_from_slice(&kind.to_be_bytes());
    r.extend_from_slice(&handle.to_be_bytes());
    r.extend_from_slice(&offset.to_be_bytes());
    r.extend_from_slice(&length.to_be_bytes());
    r
}

/// A simple reply's error field, read off the socket (`None`: the connection ended).
pub fn reply_error(s: &mut impl Read) -> Option<u32> {
    let h = recv(s, 16)?;
    Some(u32::from_be_bytes([h[4], h[5], h[6], h[7]]))
}

/// Waits up to `limit` for the server to hang up, reading nothing: the time it took, or
/// `None` if the connection is still up.
pub fn hangup_within(s: &impl AsRawFd, limit: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    loop {
        let left = limit.saturating_sub(t0.elapsed());
        let mut p = libc::pollfd {
            fd: s.as_raw_fd(),
            events: libc::POLLRDHUP,
            revents: 0,
        };
        // SAFETY: one pollfd on a descriptor the caller owns, for the duration of the call.
        let n = unsafe { libc::poll(&mut p, 1, left.as_millis() as libc::c_int) };
        if n > 0 && p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
            return Some(t0.elapsed());
        }
        if left.is_zero() {
            return None;
        }
    }
}

/// Whether the server has hung up already.
pub fn hung_up(s: &impl AsRawFd) -> bool {
    hangup_within(s, Duration::ZERO).is_some()
}

/// A Unix connection in the transmission phase (after `NBD_OPT_EXPORT_NAME`).
pub fn negotiated(sock: &Path) -> UnixStream {
    let mut c = UnixStream::connect(sock).unwrap();
    export_name(&mut c).expect("the server turned the client away");
    c
}
