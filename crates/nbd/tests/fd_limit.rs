//! Regression: `serve nbd` exited when `accept()` failed; 1,100 idle connections under
//! `ulimit -n 1024` killed it. With the descriptor limit lowered (in this test binary only),
//! more connections than descriptors: the server logs the failed accepts, keeps running, and
//! serves an honest client once descriptors are free again.
#![allow(clippy::unwrap_used, missing_docs)]

use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tegula_device::{profile, BlockDevice, Disk};
use tegula_nbd::{Listener, NbdClient, ServerOptions};

#[test]
fn accept_failing_for_lack_of_descriptors_does_not_stop_the_server() {
    let limit = libc::rlimit {
        rlim_cur: 128,
        rlim_max: 128,
    };
    // SAFETY: setrlimit with a valid struct; it only lowers this process's descriptor limit.
    let lowered = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } == 0;
    assert!(lowered, "setrlimit(RLIMIT_NOFILE) failed");

    let dir = tempfile::tempdir().unwrap();
    let mut cfg = profile("cmr-7200").unwrap();
    cfg.capacity = 1 << 30;
    let dev: Arc<dyn BlockDevice> = Arc::new(Disk::in_memory(cfg).unwrap());
    let sock = dir.path().join("d.sock");
    let l = Listener::unix(&sock).unwrap();
    let opts = ServerOptions {
        max_connections: 1000,
        handshake_timeout: Duration::from_millis(300),
        ..ServerOptions::default()
    };
    let server = std::thread::spawn(move || l.serve(dev, opts));

    // Use up the descriptors: each client end takes one here, each accepted end one or more.
    let mut held = Vec::new();
    for _ in 0..400 {
        match UnixStream::connect(&sock) {
            Ok(s) => held.push(s),
            Err(_) => break,
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !server.is_finished(),
        "the server stopped when accept failed"
    );
    drop(held);

    let uri = format!("nbd+unix:///?socket={}", sock.display());
    let t0 = Instant::now();
    let mut c = loop {
        match NbdClient::connect(&uri) {
            Ok(c) => break c,
            Err(e) => {
                assert!(t0.elapsed() < Duration::from_secs(20), "no service: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    c.write(0, &[1u8; 4096], true).unwrap();
    let mut back = vec![0u8; 4096];
    c.read(0, &mut back).unwrap();
    assert_eq!(back, vec![1u8; 4096]);
    assert!(!server.is_finished());
}
