//! Crashes and stops: kill -9 under `appendfsync always` (image and zone files) and
//! `everysec` (an image, and zone files, where nothing is lost), and SIGTERM, checked against
//! what was acknowledged.

use super::*;

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

/// On zone files SMRDB hands each write's log records to the files before the SET is
/// acknowledged (`log_write_through`, the default), so a `kill -9` loses nothing even when the
/// server syncs only every second, as with redis-server's `appendfsync everysec` and a crashed
/// process (not machine).
#[test]
fn kill_9_on_zone_files_loses_no_acknowledged_write_under_appendfsync_everysec() {
    let dir = tempfile::tempdir().unwrap();
    kill_9_loses_nothing(&zone_files_database(dir.path()), "everysec");
}

fn kill_9_under_always(img: &Path) {
    kill_9_loses_nothing(img, "always");
}

fn kill_9_loses_nothing(img: &Path, appendfsync: &str) {
    let s = Served::start(img, &["--appendfsync", appendfsync]);
    let acked = set_until_killed(s, "", 8, Duration::from_millis(1500));
    assert!(acked.len() > 50, "only {} writes acknowledged", acked.len());
    let s = Served::start(img, &[]);
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
            let got = c.cmd(&[b"GET", format!("e{w}:{j}").as_bytes()]);
            assert!(
                before_kill < Duration::from_secs(2),
                "writer {w}: SET {j}, acknowledged {before_kill:?} before the kill, was lost \
                 (GET answers {:?}; {} of its {} SETs read back; server log: {})",
                String::from_utf8_lossy(&got),
                acks.iter()
                    .filter(|(j, _)| c.cmd(&[b"GET", format!("e{w}:{j}").as_bytes()])
                        == format!("value-{w}-{j}").as_bytes())
                    .count(),
                acks.len(),
                s.stderr_now()
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

/// Runs `writers` connections against `s`, each SETting unique keys (`{tag}w{writer}:{n}`,
/// values of varying length; half of them pipelining 8 at a time), kills the server with
/// SIGKILL after `run`, and returns every SET it acknowledged.
pub(crate) fn set_until_killed(
    s: Served,
    tag: &str,
    writers: usize,
    run: Duration,
) -> Vec<(String, String)> {
    let acked = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for w in 0..writers {
        let (acked, stop, addr) = (acked.clone(), stop.clone(), s.addr());
        let tag = tag.to_string();
        threads.push(std::thread::spawn(move || {
            let mut c = Client::connect(addr);
            let depth = if w % 2 == 0 { 1 } else { 8 };
            let mut i = 0u64;
            'outer: while !stop.load(Ordering::Relaxed) {
                let batch: Vec<(String, String)> = (i..i + depth)
                    .map(|j| {
                        (
                            format!("{tag}w{w}:{j}"),
                            format!("value-{tag}-{w}-{j}-{}", "x".repeat((j % 50) as usize)),
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
    std::thread::sleep(run);
    s.signal(libc::SIGKILL);
    let (status, _) = s.wait();
    assert!(!status.success());
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    acked
}
