//! `tegula serve resp` end to end with the real binary: a scripted redis-cli session, a small
//! redis-benchmark run, kill -9 under `appendfsync always` (every acknowledged SET survives) and
//! `everysec` (at most about the last second lost),
//! SIGTERM (a clean, durable stop) and hostile clients (1,100 idle connections, random
//! bytes, huge bulk lengths, clients that never read) against bounded memory. A test whose
//! tool is missing prints `SKIPPED: <reason>` and returns; `.ci/run` installs the tools.
#![allow(clippy::unwrap_used, missing_docs)]

#[path = "../common/mod.rs"]
mod common;

mod clients;
mod crash;
mod exposure;
mod hostile;
mod kvimr;

use common::{have, success_out as ok, tegula_cmd as tegula};
use rand::{Rng, SeedableRng};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A fresh database on an emulated host-managed SMR drive.
fn database(dir: &Path) -> PathBuf {
    let p = dir.join("kv.img");
    ok(&tegula()
        .args([
            "disk",
            "create",
            "--profile",
            "hm-smr",
            "--capacity",
            "8GiB",
        ])
        .arg(&p)
        .output()
        .unwrap());
    ok(&tegula().args(["db", "create"]).arg(&p).output().unwrap());
    p
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The port in a server's start-up line ("serving ... over RESP at 127.0.0.1:PORT, ..."),
/// once it is printed.
fn started_port(stderr: &str) -> Option<u16> {
    let line = stderr.lines().find(|l| l.contains(" over RESP at "))?;
    let addr = line.split(" over RESP at ").nth(1)?.split(',').next()?;
    addr.rsplit(':').next()?.parse().ok()
}

/// A running `tegula serve resp`; killed on drop.
struct Served {
    child: Child,
    port: u16,
    /// What it printed on stderr so far (read by a thread, so that it never blocks).
    err: Arc<Mutex<String>>,
    err_reader: Option<std::thread::JoinHandle<()>>,
}

impl Served {
    fn start(img: &Path, extra: &[&str]) -> Served {
        Self::start_env(img, extra, &[])
    }

    /// Starts it with `env` added to its environment.
    ///
    /// It binds port 0 and the port is read from its start-up line: a port picked here and
    /// passed on could be taken by another test's server in between, and this test would
    /// then talk to that one.
    fn start_env(img: &Path, extra: &[&str], env: &[(&str, &str)]) -> Served {
        let mut child = tegula()
            .args(["serve", "resp"])
            .arg(img)
            .args(["--port", "0"])
            .args(extra)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let e = err.clone();
        let err_reader = Some(std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                e.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        }));
        let t0 = Instant::now();
        let port = loop {
            if let Some(port) = started_port(&err.lock().unwrap()) {
                break port;
            }
            if let Ok(Some(status)) = child.try_wait() {
                // Let the reader take the rest of what it printed.
                std::thread::sleep(Duration::from_millis(100));
                panic!("server exited with {status}: {}", err.lock().unwrap());
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        Served {
            child,
            port,
            err,
            err_reader,
        }
    }

    /// What it printed on stderr so far.
    fn stderr_now(&self) -> String {
        self.err.lock().unwrap().clone()
    }

    /// What it printed on stderr once that holds `needle`, or after 10 s without it: the
    /// reader thread may not yet have passed on a line the server printed before it answered.
    fn stderr_with(&self, needle: &str) -> String {
        let t0 = Instant::now();
        loop {
            let now = self.stderr_now();
            if now.contains(needle) || t0.elapsed() > Duration::from_secs(10) {
                return now;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether it still runs.
    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn client(&self) -> Client {
        Client::connect(self.addr())
    }

    /// Resident memory of the server process, in KiB.
    fn rss_kib(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, sig) }, 0);
    }

    fn wait(mut self) -> (std::process::ExitStatus, String) {
        let status = self.child.wait().unwrap();
        if let Some(r) = self.err_reader.take() {
            r.join().unwrap();
        }
        (status, self.stderr_now())
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw-socket RESP client: commands out, replies in, as bytes.
struct Client {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
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

    /// One reply's first line (and a bulk string's body): enough for these tests.
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

/// A fresh database on a zone-files directory of 1 MiB zones: every synced round is at least
/// a 4 KiB log write, so a second of writes fills and leaves several log bands.
fn zone_files_database(dir: &Path) -> PathBuf {
    let p = dir.join("kv.zones");
    ok(&tegula()
        .args([
            "db",
            "create",
            "--zone-files",
            "1MiB",
            "--capacity",
            "128MiB",
        ])
        .arg(&p)
        .output()
        .unwrap());
    p
}

/// Raises the soft descriptor limit as far as the hard one allows; returns it.
fn raise_nofile(want: u64) -> u64 {
    // SAFETY: getrlimit/setrlimit on a local struct.
    unsafe {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        if r.rlim_cur < want {
            r.rlim_cur = want.min(r.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        r.rlim_cur
    }
}

/// Whether the server closed `t` (end of stream or reset), waiting up to `wait`.
fn closed_by_server(t: &mut TcpStream, wait: Duration) -> bool {
    t.set_read_timeout(Some(wait)).unwrap();
    let mut sink = [0u8; 4096];
    loop {
        match t.read(&mut sink) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                )
            }
        }
    }
}

/// The server's resident memory now, and its highest value while `work` runs (sampled every
/// 20 ms), in KiB.
fn peak_rss_while(s: &Served, work: impl FnOnce() + Send) -> u64 {
    let done = AtomicBool::new(false);
    let mut peak = s.rss_kib();
    std::thread::scope(|sc| {
        let h = sc.spawn(|| {
            work();
            done.store(true, Ordering::Relaxed);
        });
        while !done.load(Ordering::Relaxed) {
            peak = peak.max(s.rss_kib());
            std::thread::sleep(Duration::from_millis(20));
        }
        h.join().unwrap();
    });
    peak.max(s.rss_kib())
}

/// `clients` connections, each sending (after `prefix`) the header of a `len`-byte argument
/// and then up to `send` bytes of it, in 1 MiB writes, until the server closes it; returns
/// the connections (still open on this side).
fn partial_arguments(
    addr: SocketAddr,
    clients: usize,
    prefix: &[u8],
    len: usize,
    send: usize,
) -> Vec<TcpStream> {
    let conns = Mutex::new(Vec::new());
    std::thread::scope(|sc| {
        for _ in 0..clients {
            sc.spawn(|| {
                let mut t = TcpStream::connect(addr).unwrap();
                t.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
                let mut ok = t.write_all(prefix).is_ok();
                let head = format!("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${len}\r\n");
                ok = ok && t.write_all(head.as_bytes()).is_ok();
                let chunk = vec![b'x'; 1 << 20];
                let mut sent = 0;
                while ok && sent < send {
                    let n = chunk.len().min(send - sent);
                    ok = t.write_all(&chunk[..n]).is_ok();
                    sent += n;
                }
                conns.lock().unwrap().push(t);
            });
        }
    });
    conns.into_inner().unwrap()
}

/// A request in RESP, as bytes.
fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut m = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        m.extend(format!("${}\r\n", a.len()).bytes());
        m.extend_from_slice(a);
        m.extend_from_slice(b"\r\n");
    }
    m
}

/// This host's address on its default route (not loopback), if it has one.
fn outside_address() -> Option<std::net::IpAddr> {
    let u = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    u.connect("192.0.2.1:9").ok()?;
    let ip = u.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}
