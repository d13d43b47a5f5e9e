//! `tegula serve resp` end to end with the real binary: a scripted redis-cli session, a small
//! redis-benchmark run, kill -9 under `appendfsync always` (every acknowledged SET survives) and
//! `everysec` (at most about the last second lost),
//! SIGTERM (a clean, durable stop) and hostile clients (1,100 idle connections, random
//! bytes, huge bulk lengths, clients that never read) against bounded memory. A test whose
//! tool is missing prints `SKIPPED: <reason>` and returns; `.ci/run` installs the tools.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

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
    fn start_env(img: &Path, extra: &[&str], env: &[(&str, &str)]) -> Served {
        let port = free_port();
        let mut child = tegula()
            .args(["serve", "resp"])
            .arg(img)
            .args(["--port", &port.to_string()])
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
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("server exited with {status}: {}", err.lock().unwrap());
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
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

#[test]
fn redis_cli_scripted_session() {
    if !have("redis-cli") {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: redis-cli not installed (Debian redis-tools)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = database(dir.path());
    let s = Served::start(&img, &[]);
    let script = "SET k v\nGET k\nHSET user:1 name ada lang rust\nHGETALL user:1\nINCR n\n\
                  INCRBY n 9\nMSET a 1 b 2\nMGET a b nokey\nDBSIZE\nDEL a\nEXISTS a b\n\
                  SET t x EX 100\nTTL t\nTYPE user:1\nPING\n";
    let mut child = Command::new("redis-cli")
        .args(["-p", &s.port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = ok(&child.wait_with_output().unwrap());
    let lines: Vec<&str> = out.lines().collect();
    let want = [
        // HGETALL lists fields in byte order (a range scan), not insertion order.
        "OK", "v", "2", "lang", "rust", "name", "ada", "1", "10", "OK", "1", "2", "", "5", "1", "1",
        "OK", "100", "hash", "PONG",
    ];
    assert_eq!(lines, want, "{out}");
    // One command per invocation, as the issue's acceptance check runs it.
    let get = Command::new("redis-cli")
        .args(["-p", &s.port.to_string(), "get", "k"])
        .output()
        .unwrap();
    assert_eq!(ok(&get).trim(), "v");
    let scan = Command::new("redis-cli")
        .args(["-p", &s.port.to_string(), "--scan", "--pattern", "*"])
        .output()
        .unwrap();
    let mut keys: Vec<String> = ok(&scan).lines().map(String::from).collect();
    keys.sort();
    assert_eq!(keys, ["b", "k", "n", "t", "user:1"]);
}

#[test]
fn redis_benchmark_small_run() {
    if !have("redis-benchmark") {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: redis-benchmark not installed (Debian redis-tools)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = database(dir.path());
    let s = Served::start(&img, &["--appendfsync", "always"]);
    for pipeline in ["1", "16"] {
        let out = Command::new("redis-benchmark")
            .args(["-p", &s.port.to_string(), "-t", "set,get,incr,mset"])
            .args([
                "-n", "2000", "-c", "10", "-r", "1000", "-d", "100", "-P", pipeline,
            ])
            .arg("--csv")
            .output()
            .unwrap();
        let csv = ok(&out);
        let rows: Vec<&str> = csv.lines().filter(|l| !l.starts_with("\"test\"")).collect();
        assert_eq!(rows.len(), 4, "{csv}");
        for r in rows {
            let rps: f64 = r
                .split(',')
                .nth(1)
                .unwrap()
                .trim_matches('"')
                .parse()
                .unwrap();
            assert!(rps > 0.0, "{r}");
        }
    }
    let mut c = s.client();
    let n: i64 = String::from_utf8(c.cmd(&[b"DBSIZE"]))
        .unwrap()
        .trim_start_matches(':')
        .parse()
        .unwrap();
    assert!(n > 500, "{n} keys after the benchmark");
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

#[test]
fn kill_9_loses_no_acknowledged_write_under_appendfsync_always() {
    let dir = tempfile::tempdir().unwrap();
    kill_9_under_always(&database(dir.path()));
}

/// The same on zone files, where a sync flushes only the log bands' files.
#[test]
fn kill_9_on_zone_files_loses_no_acknowledged_write_under_appendfsync_always() {
    let dir = tempfile::tempdir().unwrap();
    kill_9_under_always(&zone_files_database(dir.path()));
}

fn kill_9_under_always(img: &Path) {
    let img = img.to_path_buf();
    let s = Served::start(&img, &["--appendfsync", "always"]);
    let acked = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..8 {
        let (acked, stop, addr) = (acked.clone(), stop.clone(), s.addr());
        writers.push(std::thread::spawn(move || {
            let mut c = Client::connect(addr);
            let mut i = 0u64;
            // Half the writers pipeline 8 SETs at a time.
            let depth = if w % 2 == 0 { 1 } else { 8 };
            'outer: while !stop.load(Ordering::Relaxed) {
                let batch: Vec<(String, String)> = (0..depth)
                    .map(|j| (format!("w{w}:{}", i + j), format!("value-{w}-{}", i + j)))
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
    std::thread::sleep(Duration::from_millis(1500));
    s.signal(libc::SIGKILL);
    let (status, _) = s.wait();
    assert!(!status.success());
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() > 50, "only {} writes acknowledged", acked.len());
    let s = Served::start(&img, &[]);
    let mut c = s.client();
    let mut lost = Vec::new();
    for (k, v) in &acked {
        if c.cmd(&[b"GET", k.as_bytes()]) != v.as_bytes() {
            lost.push(k.clone());
        }
    }
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged SETs lost after kill -9: {:?}",
        lost.len(),
        acked.len(),
        &lost[..lost.len().min(10)]
    );
}

/// Under `appendfsync everysec` a `kill -9` loses at most about the last second: every SET
/// acknowledged more than two seconds before the kill reads back (the engine's timer syncs
/// writes older than one second; the other second is room for the sync itself and a busy
/// machine), and what each connection lost is a suffix of what it wrote.
#[test]
fn kill_9_under_everysec_loses_at_most_about_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let img = database(dir.path());
    let s = Served::start(&img, &["--appendfsync", "everysec"]);
    type Acked = Vec<(u64, Instant)>;
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4u64 {
        let (stop, addr) = (stop.clone(), s.addr());
        writers.push(std::thread::spawn(move || -> Acked {
            let mut c = Client::connect(addr);
            let mut acked = Vec::new();
            let depth = if w % 2 == 0 { 1 } else { 8 };
            let mut i = 0u64;
            'outer: while !stop.load(Ordering::Relaxed) {
                for j in i..i + depth {
                    let (k, v) = (format!("e{w}:{j}"), format!("value-{w}-{j}"));
                    if c.send(&[b"SET", k.as_bytes(), v.as_bytes()]).is_err() {
                        break 'outer;
                    }
                }
                for j in i..i + depth {
                    match c.read() {
                        Ok(r) if r == b"+OK" => acked.push((j, Instant::now())),
                        _ => break 'outer,
                    }
                }
                i += depth;
            }
            acked
        }));
    }
    std::thread::sleep(Duration::from_millis(3500));
    let killed = Instant::now();
    s.signal(libc::SIGKILL);
    let (status, _) = s.wait();
    assert!(!status.success());
    stop.store(true, Ordering::Relaxed);
    let acked: Vec<Acked> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    let s = Served::start(&img, &[]);
    let mut c = s.client();
    let mut old = 0;
    for (w, acks) in acked.iter().enumerate() {
        assert!(
            acks.len() > 20,
            "writer {w}: only {} SETs acknowledged",
            acks.len()
        );
        // The first write of this connection that did not survive, if any.
        let first_lost = acks.iter().position(|(j, _)| {
            c.cmd(&[b"GET", format!("e{w}:{j}").as_bytes()]) != format!("value-{w}-{j}").as_bytes()
        });
        if let Some(p) = first_lost {
            let (j, at) = acks[p];
            let before_kill = killed.saturating_duration_since(at);
            assert!(
                before_kill < Duration::from_secs(2),
                "writer {w}: SET {j}, acknowledged {before_kill:?} before the kill, was lost"
            );
            for (j, _) in &acks[p..] {
                let got = c.cmd(&[b"GET", format!("e{w}:{j}").as_bytes()]);
                assert_ne!(
                    got,
                    format!("value-{w}-{j}").as_bytes(),
                    "writer {w}: SET {j} survived although an earlier one was lost"
                );
            }
        }
        old += acks
            .iter()
            .filter(|(_, at)| killed.saturating_duration_since(*at) >= Duration::from_secs(2))
            .count();
    }
    assert!(
        old > 20,
        "only {old} SETs were acknowledged over two seconds before the kill"
    );
}

#[test]
fn sigterm_stops_cleanly_and_keeps_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let img = database(dir.path());
    let s = Served::start(&img, &["--appendfsync", "no"]);
    let mut c = s.client();
    for i in 0..500 {
        c.send(&[b"SET", format!("k{i}").as_bytes(), b"v"]).unwrap();
    }
    for _ in 0..500 {
        assert_eq!(c.read().unwrap(), b"+OK");
    }
    s.signal(libc::SIGTERM);
    let (status, err) = s.wait();
    assert!(status.success(), "{err}");
    assert!(err.contains("stopped"), "{err}");
    let s = Served::start(&img, &[]);
    let mut c = s.client();
    assert_eq!(c.cmd(&[b"DBSIZE"]), b":500");
    // Two servers never share one image: the second one fails with the holder named.
    let port = free_port().to_string();
    let second = tegula()
        .args(["serve", "resp"])
        .arg(&img)
        .args(["--port", &port, "--lock-wait", "0"])
        .output()
        .unwrap();
    assert!(!second.status.success());
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

#[test]
fn hostile_clients_leave_the_server_up_with_bounded_memory() {
    // 1,100 idle connections need 2,200 descriptors here (both ends) and 1,100 there.
    let limit = raise_nofile(4096);
    if limit < 2600 {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: the descriptor limit is {limit} (2,600 needed)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = database(dir.path());
    let s = Served::start(
        &img,
        &[
            "--proto-max-bulk-len",
            "1MiB",
            "--client-query-buffer-limit",
            "4MiB",
            "--client-output-buffer-limit",
            "8MiB",
        ],
    );
    let mut c = s.client();
    let big = vec![b'x'; 512 << 10];
    assert_eq!(c.cmd(&[b"SET", b"big", &big]), b"+OK");
    let rss0 = s.rss_kib();

    // 1,100 idle connections: all accepted, the server still answers.
    let idle: Vec<TcpStream> = (0..1100)
        .map(|_| TcpStream::connect(s.addr()).unwrap())
        .collect();
    assert_eq!(c.cmd(&[b"PING"]), b"+PONG");
    let mut last = Client::connect(s.addr());
    assert_eq!(last.cmd(&[b"PING"]), b"+PONG");

    // Random bytes: an error reply or a disconnect, never a dead server.
    let mut rng = rand::rngs::StdRng::seed_from_u64(16);
    for _ in 0..200 {
        let mut t = TcpStream::connect(s.addr()).unwrap();
        t.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let n = rng.gen_range(1..4096);
        let junk: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
        let _ = t.write_all(&junk);
        let _ = t.shutdown(std::net::Shutdown::Write);
        let mut sink = Vec::new();
        let _ = t.read_to_end(&mut sink);
    }
    // Huge bulk and multibulk lengths are refused before their bytes are read.
    for bad in [
        &b"*1\r\n$9223372036854775807\r\n"[..],
        b"*2\r\n$3\r\nGET\r\n$2000000\r\n",
        b"*99999999999\r\n",
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n",
    ] {
        let mut t = Client::connect(s.addr());
        t.s.write_all(bad).unwrap();
        let r = t.read().unwrap();
        assert!(
            r.starts_with(b"-ERR Protocol error"),
            "{}",
            String::from_utf8_lossy(&r)
        );
        assert!(t.read().is_err(), "the connection is closed");
    }
    // A request that never ends is cut at the query buffer limit.
    let mut t = Client::connect(s.addr());
    let _ = t.s.write_all(b"*2000000\r\n");
    let arg = b"$3\r\nabc\r\n".repeat(600_000);
    let _ = t.s.write_all(&arg);
    let r = t.read();
    assert!(matches!(&r, Ok(l) if l.starts_with(b"-ERR Protocol error")) || r.is_err());

    // Clients that send GETs of a 512 KiB value and never read: their replies stop at the
    // output buffer limit (they are disconnected) instead of filling memory.
    let mut hogs = Vec::new();
    for _ in 0..20 {
        let mut t = TcpStream::connect(s.addr()).unwrap();
        t.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
        let req = b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n".repeat(200);
        let _ = t.write_all(&req);
        hogs.push(t);
    }
    std::thread::sleep(Duration::from_secs(2));
    let rss = s.rss_kib();
    // 20 clients × (8 MiB limit + one round of replies) at most, plus the idle connections.
    assert!(
        rss < rss0 + 400 * 1024,
        "server RSS grew from {rss0} KiB to {rss} KiB"
    );
    assert_eq!(last.cmd(&[b"GET", b"big"]).len(), big.len());
    let mut info = Client::connect(s.addr());
    info.send(&[b"INFO", b"stats"]).unwrap();
    let stats = String::from_utf8(info.read().unwrap()).unwrap();
    assert!(stats.contains("protocol_error_disconnections:"), "{stats}");
    drop(hogs);
    drop(idle);
    s.signal(libc::SIGTERM);
    let (status, err) = s.wait();
    assert!(status.success(), "{err}");
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

/// An HTTP POST (what any web page can make a browser send to 127.0.0.1:PORT) whose body
/// holds Redis commands: nothing in it runs, the connection is closed, the server goes on
/// and says so on stderr.
#[test]
fn an_http_post_to_the_port_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let img = database(dir.path());
    let mut s = Served::start(&img, &[]);
    let mut c = s.client();
    assert_eq!(c.cmd(&[b"SET", b"keep", b"1"]), b"+OK");
    let body = "SET k v\r\nFLUSHALL\r\nSHUTDOWN\r\n";
    let post = format!(
        "POST /form HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nUser-Agent: Mozilla/5.0 (X11; Linux \
         x86_64) Firefox/128.0\r\nAccept: */*\r\nOrigin: http://attacker.example\r\n\
         Content-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
        s.port,
        body.len()
    );
    let mut t = TcpStream::connect(s.addr()).unwrap();
    t.write_all(post.as_bytes()).unwrap();
    assert!(
        closed_by_server(&mut t, Duration::from_secs(10)),
        "the connection is closed"
    );
    // The body may also arrive in a later packet than the request line.
    let mut t = TcpStream::connect(s.addr()).unwrap();
    t.write_all(b"POST / HTTP/1.1\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let _ = t.write_all(&post.as_bytes()[17..]);
    assert!(closed_by_server(&mut t, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(300));
    assert!(s.running(), "SHUTDOWN did not run");
    let mut c = s.client();
    assert_eq!(c.cmd(&[b"GET", b"k"]), b"$-1", "SET did not run");
    assert_eq!(c.cmd(&[b"GET", b"keep"]), b"1", "FLUSHALL did not run");
    s.signal(libc::SIGTERM);
    let (status, err) = s.wait();
    assert!(status.success(), "{err}");
    assert!(err.contains("possible SECURITY ATTACK"), "{err}");
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

/// Issue 33 item 8: 100 clients that have not authenticated, each sending a 15 MiB
/// argument it never finishes, leave the server under 100 MB more than idle (Redis 7's limits
/// close each at its argument's header); 100 authenticated clients doing the same are held
/// to --maxmemory-clients.
#[test]
fn clients_sending_huge_partial_arguments_leave_memory_bounded() {
    let limit = raise_nofile(1024);
    if limit < 400 {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: the descriptor limit is {limit} (400 needed)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = database(dir.path());
    let s = Served::start_env(
        &img,
        &["--maxmemory-clients", "64MiB"],
        &[("TEGULA_REQUIREPASS", "pw-33")],
    );
    let mut c = s.client();
    assert_eq!(c.cmd(&[b"AUTH", b"pw-33"]), b"+OK");
    let idle = s.rss_kib();
    let mut held = Vec::new();
    let peak_unauth = peak_rss_while(&s, || {
        held = partial_arguments(s.addr(), 100, b"", 15 << 20, 15 << 20);
    });
    let after_unauth = s.rss_kib();
    assert!(held.len() == 100);
    let mut closed = 0;
    for t in &mut held {
        closed += usize::from(closed_by_server(t, Duration::from_millis(50)));
    }
    drop(held);
    let auth = encode(&[b"AUTH", b"pw-33"]);
    let mut held = Vec::new();
    let peak_auth = peak_rss_while(&s, || {
        held = partial_arguments(s.addr(), 100, &auth, 15 << 20, 15 << 20);
    });
    let during_auth = s.rss_kib();
    std::thread::sleep(Duration::from_millis(500));
    let after_auth = s.rss_kib();
    let mut evicted = 0;
    for t in &mut held {
        evicted += usize::from(closed_by_server(t, Duration::from_millis(50)));
    }
    drop(held);
    assert_eq!(c.cmd(&[b"PING"]), b"+PONG");
    let _ = writeln!(
        std::io::stderr(),
        "idle {idle} KiB; 100 unauthenticated clients x 15 MiB: peak {peak_unauth} KiB \
         (+{} KiB), after {after_unauth} KiB, {closed} closed; 100 authenticated clients x \
         15 MiB with --maxmemory-clients 64MiB: peak {peak_auth} KiB (+{} KiB), at the end \
         {during_auth} KiB, 0.5 s later {after_auth} KiB, {evicted} evicted",
        peak_unauth - idle,
        peak_auth.saturating_sub(idle)
    );
    assert_eq!(closed, 100, "every unauthenticated client is closed");
    assert!(
        peak_unauth < idle + 100 * 1024,
        "unauthenticated clients took the server from {idle} KiB to {peak_unauth} KiB"
    );
    assert!(evicted >= 90, "{evicted} authenticated clients evicted");
    // The limit, one client's read past it (15 MiB) and allocator slack.
    assert!(
        peak_auth < idle + 150 * 1024,
        "authenticated clients took the server from {idle} KiB to {peak_auth} KiB"
    );
    s.signal(libc::SIGTERM);
    let (status, err) = s.wait();
    assert!(status.success(), "{err}");
    assert!(err.contains("past maxmemory-clients"), "{err}");
    assert!(!err.contains("pw-33"), "the password is in the log: {err}");
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

/// Issue 33 item 8: 10,000 SCAN cursors over 64 KiB keys add under 50 MB (a cursor keeps at
/// most 256 bytes of its key), and what they hold is not kept after the keys are deleted.
#[test]
fn scan_cursors_over_64_kib_keys_stay_small() {
    let dir = tempfile::tempdir().unwrap();
    let img = database(dir.path());
    let s = Served::start(&img, &[]);
    let mut c = s.client();
    let keys: Vec<Vec<u8>> = (0..100)
        .map(|i| {
            let mut k = format!("{i:03}:").into_bytes();
            k.resize(65_535, b'k');
            k
        })
        .collect();
    for k in &keys {
        assert_eq!(c.cmd(&[b"SET", k, b"v"]), b"+OK");
    }
    let scan_once = |c: &mut Client| {
        let mut cursor = b"0".to_vec();
        let mut calls = 0;
        loop {
            c.send(&[b"SCAN", &cursor, b"COUNT", b"1"]).unwrap();
            assert_eq!(c.read().unwrap(), b"*2");
            cursor = c.read().unwrap();
            let n: usize = std::str::from_utf8(&c.read().unwrap()[1..])
                .unwrap()
                .parse()
                .unwrap();
            for _ in 0..n {
                assert_eq!(c.read().unwrap().len(), 65_535);
            }
            calls += 1;
            if cursor == b"0" {
                return calls;
            }
        }
    };
    scan_once(&mut c);
    let before = s.rss_kib();
    let t0 = Instant::now();
    let mut cursors = 0;
    while cursors < 10_000 {
        cursors += scan_once(&mut c) - 1;
    }
    let after = s.rss_kib();
    let took = t0.elapsed();
    let mut info = Client::connect(s.addr());
    info.send(&[b"INFO", b"memory"]).unwrap();
    let mem = String::from_utf8(info.read().unwrap()).unwrap();
    for k in &keys {
        assert_eq!(c.cmd(&[b"DEL", k]), b":1");
    }
    let deleted = s.rss_kib();
    let _ = writeln!(
        std::io::stderr(),
        "100 keys of 64 KiB: {before} KiB; after {cursors} SCAN cursors ({took:?}): {after} KiB \
         (+{} KiB); after DEL of every key: {deleted} KiB; {}",
        after.saturating_sub(before),
        mem.lines()
            .filter(|l| l.starts_with("scan_cursors"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    assert!(
        after < before + 50 * 1024,
        "{cursors} cursors took the server from {before} KiB to {after} KiB"
    );
    // Deleting writes a tombstone of each 64 KiB key into the memtable; no more.
    assert!(
        deleted < before + 50 * 1024,
        "after the keys were deleted the server held {deleted} KiB (before the cursors: \
         {before} KiB)"
    );
}

/// This host's address on its default route (not loopback), if it has one.
fn outside_address() -> Option<std::net::IpAddr> {
    let u = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    u.connect("192.0.2.1:9").ok()?;
    let ip = u.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// Issue 33 item 9: `--bind 0.0.0.0` without a password serves loopback clients only, says so
/// at start-up, and refuses others with -DENIED; `--protected-mode no` serves them.
#[test]
fn protected_mode_serves_only_loopback_without_a_password() {
    let dir = tempfile::tempdir().unwrap();
    let img = database(dir.path());
    let s = Served::start(&img, &["--bind", "0.0.0.0"]);
    let mut c = s.client();
    assert_eq!(c.cmd(&[b"PING"]), b"+PONG");
    let note = s.stderr_now();
    assert!(note.contains("protected mode is on"), "{note}");
    match outside_address() {
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED (in part): no address other than loopback to connect from"
            );
        }
        Some(ip) => {
            let mut o = Client::connect(SocketAddr::new(ip, s.port));
            let r = o.read().unwrap();
            assert!(
                r.starts_with(b"-DENIED "),
                "{}",
                String::from_utf8_lossy(&r)
            );
            assert!(o.read().is_err(), "the connection is closed");
            drop(s);
            let s = Served::start(&img, &["--bind", "0.0.0.0", "--protected-mode", "no"]);
            let mut o = Client::connect(SocketAddr::new(ip, s.port));
            assert_eq!(o.cmd(&[b"PING"]), b"+PONG");
            let note = s.stderr_now();
            assert!(
                note.contains("without a password and with protected mode off"),
                "{note}"
            );
        }
    }
}

/// Issue 33 item 9: the password from a file or the environment works and appears in no
/// error or log line, not even in the lock error another tegula command prints about the
/// server (it quotes the server's command line); `--requirepass` still works, with a warning.
#[test]
fn the_password_from_a_file_or_the_environment_is_never_shown() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let img = database(dir.path());
    let secret = "Tr0ub4dor-33-secret";
    let file = dir.path().join("pass");
    std::fs::write(&file, format!("{secret}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let s = Served::start(&img, &["--requirepass-file", file.to_str().unwrap()]);
    let mut c = s.client();
    assert!(c.cmd(&[b"GET", b"k"]).starts_with(b"-NOAUTH"));
    assert!(c.cmd(&[b"AUTH", b"wrong"]).starts_with(b"-WRONGPASS"));
    assert_eq!(c.cmd(&[b"AUTH", secret.as_bytes()]), b"+OK");
    let other = tegula()
        .args(["db", "get"])
        .arg(&img)
        .args(["k", "--lock-wait", "0"])
        .output()
        .unwrap();
    assert!(!other.status.success());
    let msg = String::from_utf8_lossy(&other.stderr).to_string();
    assert!(msg.contains("serve resp"), "the holder is named: {msg}");
    assert!(!msg.contains(secret), "{msg}");
    s.signal(libc::SIGTERM);
    let (status, err) = s.wait();
    assert!(status.success(), "{err}");
    assert!(!err.contains(secret) && !err.contains("warning"), "{err}");
    // A file others can read: served, with a warning.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let s = Served::start(&img, &["--requirepass-file", file.to_str().unwrap()]);
    assert!(s.stderr_now().contains("can be read by other users"));
    drop(s);
    // The environment.
    let s = Served::start_env(&img, &[], &[("TEGULA_REQUIREPASS", secret)]);
    let mut c = s.client();
    assert!(c.cmd(&[b"GET", b"k"]).starts_with(b"-NOAUTH"));
    assert_eq!(c.cmd(&[b"AUTH", secret.as_bytes()]), b"+OK");
    drop(s);
    // On the command line: works, with a warning.
    let s = Served::start(&img, &["--requirepass", secret]);
    let mut c = s.client();
    assert_eq!(c.cmd(&[b"AUTH", secret.as_bytes()]), b"+OK");
    let err = s.stderr_now();
    assert!(
        err.contains("warning: --requirepass puts the password on the command line"),
        "{err}"
    );
    assert!(!err.contains(secret), "{err}");
    drop(s);
    // Errors about a bad password source never quote it.
    std::fs::write(&file, format!("{secret}\nsecond line\n")).unwrap();
    let out = tegula()
        .args(["serve", "resp"])
        .arg(&img)
        .args(["--port", &free_port().to_string(), "--requirepass-file"])
        .arg(&file)
        .output()
        .unwrap();
    let msg = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !out.status.success() && msg.contains("more than one line"),
        "{msg}"
    );
    assert!(!msg.contains(secret), "{msg}");
}

/// Issue 33 item 9: FLUSHALL, FLUSHDB, SHUTDOWN and CONFIG can be renamed or disabled.
#[test]
fn rename_command_disables_or_renames_dangerous_commands() {
    let dir = tempfile::tempdir().unwrap();
    let img = database(dir.path());
    let mut s = Served::start(
        &img,
        &[
            "--rename-command",
            "FLUSHALL",
            "",
            "--rename-command",
            "FLUSHDB",
            "",
            "--rename-command",
            "CONFIG",
            "",
            "--rename-command",
            "SHUTDOWN",
            "stop-now-7",
        ],
    );
    let mut c = s.client();
    assert_eq!(c.cmd(&[b"SET", b"k", b"v"]), b"+OK");
    for gone in [
        &[&b"FLUSHALL"[..]][..],
        &[b"flushdb"],
        &[b"CONFIG", b"GET", b"*"],
        &[b"SHUTDOWN"],
    ] {
        let r = c.cmd(gone);
        assert!(
            r.starts_with(b"-ERR unknown command"),
            "{}",
            String::from_utf8_lossy(&r)
        );
    }
    assert!(s.running());
    assert_eq!(c.cmd(&[b"GET", b"k"]), b"v");
    if have("redis-cli") {
        let out = Command::new("redis-cli")
            .args(["-p", &s.port.to_string(), "flushall"])
            .output()
            .unwrap();
        assert!(ok(&out).contains("unknown command"));
    }
    c.send(&[b"STOP-NOW-7"]).unwrap();
    let (status, err) = s.wait();
    assert!(status.success(), "{err}");
    // A name that is no command is refused before anything starts.
    let out = tegula()
        .args(["serve", "resp"])
        .arg(&img)
        .args([
            "--port",
            &free_port().to_string(),
            "--rename-command",
            "FLUSHEVERYTHING",
            "",
        ])
        .output()
        .unwrap();
    let msg = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !out.status.success() && msg.contains("no such command"),
        "{msg}"
    );
}
