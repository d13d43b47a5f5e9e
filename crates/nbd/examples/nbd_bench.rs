//! NBD server throughput, tegula against nbdkit's memory plugin side by side in one run: fio
//! 1 MiB sequential writes then reads at iodepth 8 over a Unix socket, the two servers taking
//! turns in interleaved rounds (the order alternates every round) so that both see the same
//! machine load. tegula serves an unpaced in-memory drive through the same `Listener` that
//! `tegula serve nbd` uses. Prints one JSON line per fio job, then per direction the median
//! MB/s of each server, the ratio tegula/nbdkit and the physical limits measured in the same
//! run: single-thread memory copy bandwidth (1 MiB `memcpy`) and a Unix socket pair's bandwidth
//! (1 MiB `write`/`read`, which costs two copies).
//!
//! `cargo run --release -p tegula-nbd --example nbd_bench [-- SIZE_MIB [KIND] [ROUNDS]]`
//! with KIND `cmr` (default), `cmr-nocache` (the same drive with its write cache off), `dm` (an
//! in-memory journal drive with its volatile cache on) or `dm-image` (the same drive in
//! a drive image file in the temporary directory.) Needs `fio` (with the `nbd` engine) and
//! `nbdkit` on the path; without nbdkit only tegula is measured.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tegula_device::{profile, BlockDevice, Disk};
use tegula_nbd::{Listener, ServerOptions};

/// Kills nbdkit when the benchmark ends, however it ends.
struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let size_mib: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1024);
    let kind = args.get(2).cloned().unwrap_or_else(|| "cmr".into());
    let rounds: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    let dir = tempfile::tempdir()?;
    let dev: Arc<dyn BlockDevice> = if kind.starts_with("dm") {
        let text = format!(
            "kind = \"dm-smr\"\ncapacity = \"{size_mib}MiB\"\nvolatile_cache = true\n\
             volatile_cache_size = \"64MiB\"\nband_size = \"32MiB\"\ncache_size = \"256MiB\"\n"
        );
        if kind == "dm-image" {
            let cfg = tegula_stl::DmConfig::from_toml(&text)?;
            Arc::new(tegula_stl::DmDrive::create_image(
                &dir.path().join("drive.img"),
                cfg,
            )?)
        } else {
            Arc::new(tegula_stl::DmDrive::from_toml(&text)?)
        }
    } else {
        let mut c = profile("cmr-7200")?;
        c.capacity = size_mib << 20;
        c.zones.zone_size = 64 << 20;
        // `cmr-nocache`: the drive's 32 MiB write cache off, so writes go straight to the store
        // (one copy in the drive model, not a copy into the cache and another when destaging).
        c.cache.write_cache = kind != "cmr-nocache";
        Arc::new(Disk::in_memory(c)?)
    };
    let tegula_sock = dir.path().join("tegula.sock");
    let l = Listener::unix(&tegula_sock)?;
    std::thread::spawn(move || l.serve(dev, ServerOptions::default()));

    let nbdkit_sock = dir.path().join("nbdkit.sock");
    let nbdkit_pid = dir.path().join("nbdkit.pid");
    let nbdkit = Command::new("nbdkit")
        .arg("-f")
        .arg("-P")
        .arg(&nbdkit_pid)
        .arg("--exit-with-parent")
        .arg("-U")
        .arg(&nbdkit_sock)
        .arg("memory")
        .arg(format!("size={size_mib}M"))
        .stdout(Stdio::null())
        .spawn()
        .map(Reap);
    let mut servers = vec![("tegula", tegula_sock.clone())];
    // `nbdkit` lives to the end of `main`, which kills it.
    match &nbdkit {
        Ok(_) if wait_for(&nbdkit_pid) => servers.push(("nbdkit", nbdkit_sock.clone())),
        _ => eprintln!("nbdkit did not start: measuring tegula alone"),
    }

    let memcpy = memcpy_mb_per_s(1 << 30);
    let socket = socketpair_mb_per_s(1 << 30)?;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "{{\"limit\":\"memcpy_1m_single_thread\",\"mb_per_s\":{memcpy:.0}}}\n\
         {{\"limit\":\"unix_socketpair_1m\",\"mb_per_s\":{socket:.0}}}"
    );

    let mut results: Vec<(&str, &str, f64)> = Vec::new();
    for round in 0..rounds {
        let mut order = servers.clone();
        if round % 2 == 1 {
            order.reverse();
        }
        for (name, sock) in &order {
            for rw in ["write", "read"] {
                let mb = fio(dir.path(), sock, rw, size_mib)?;
                println!(
                    "{{\"bench\":\"nbd_seq_{rw}_1m\",\"server\":\"{name}\",\"device\":\"{}\",\
                     \"round\":{round},\"size_mib\":{size_mib},\"mb_per_s\":{mb:.0}}}",
                    if *name == "tegula" { &kind } else { "memory" }
                );
                results.push((name, rw, mb));
            }
        }
    }
    let load_after = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "load average before {} after {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
        load_after
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    for rw in ["write", "read"] {
        let med = |who: &str| {
            let mut v: Vec<f64> = results
                .iter()
                .filter(|r| r.0 == who && r.1 == rw)
                .map(|r| r.2)
                .collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied()
        };
        let t = med("tegula").unwrap_or(0.0);
        match med("nbdkit") {
            Some(n) => println!(
                "{rw:5}: tegula ({kind}) {t:.0} MB/s, nbdkit memory {n:.0} MB/s, ratio {:.2} \
                 (medians of {rounds}); limits: memcpy {memcpy:.0} MB/s, socket pair {socket:.0} MB/s",
                t / n
            ),
            None => println!("{rw:5}: tegula ({kind}) {t:.0} MB/s (median of {rounds})"),
        }
    }
    Ok(())
}

/// nbdkit writes its pid file once it accepts connections.
fn wait_for(pidfile: &Path) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        if pidfile.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// One fio job; MB/s.
fn fio(
    dir: &Path,
    sock: &Path,
    rw: &str,
    size_mib: u64,
) -> Result<f64, Box<dyn std::error::Error>> {
    let out = Command::new("fio")
        .current_dir(dir)
        .arg("--name=bench")
        .arg("--ioengine=nbd")
        .arg(format!("--uri=nbd+unix:///?socket={}", sock.display()))
        .arg(format!("--rw={rw}"))
        .arg("--bs=1m")
        .arg("--iodepth=8")
        .arg(format!("--size={size_mib}m"))
        .arg("--output-format=json")
        .output()?;
    if !out.status.success() {
        return Err(format!("fio failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    // fio may print notes before its JSON.
    let text = String::from_utf8_lossy(&out.stdout);
    let json = text.find("\n{").map_or(&text[..], |i| &text[i + 1..]);
    let v: serde_json::Value = serde_json::from_str(json)?;
    Ok(v["jobs"][0][rw]["bw_bytes"].as_f64().unwrap_or(0.0) / 1e6)
}

/// Single-thread copy bandwidth, 1 MiB at a time out of a 64 MiB source (larger than the
/// caches), `total` bytes in all.
fn memcpy_mb_per_s(total: usize) -> f64 {
    let src = vec![7u8; 64 << 20];
    let mut dst = vec![0u8; 64 << 20];
    let t = Instant::now();
    let mut done = 0;
    while done < total {
        let o = done % src.len();
        dst[o..o + (1 << 20)].copy_from_slice(&src[o..o + (1 << 20)]);
        done += 1 << 20;
    }
    std::hint::black_box(&dst);
    total as f64 / t.elapsed().as_secs_f64() / 1e6
}

/// A Unix socket pair's bandwidth: one thread writes 1 MiB buffers, this one reads them.
fn socketpair_mb_per_s(total: usize) -> std::io::Result<f64> {
    let (mut a, mut b) = std::os::unix::net::UnixStream::pair()?;
    let t = Instant::now();
    let w = std::thread::spawn(move || {
        let buf = vec![1u8; 1 << 20];
        let mut sent = 0;
        while sent < total {
            a.write_all(&buf)?;
            sent += buf.len();
        }
        Ok::<_, std::io::Error>(())
    });
    let mut buf = vec![0u8; 1 << 20];
    let mut got = 0;
    while got < total {
        let n = b.read(&mut buf)?;
        if n == 0 {
            break;
        }
        got += n;
    }
    w.join().expect("writer thread")?;
    Ok(got as f64 / t.elapsed().as_secs_f64() / 1e6)
}
