//! `serve resp` on a KVIMR image (SMRDB-LOC on the KVIMR store of a raw `imr` image): SET and
//! GET across a restart, and 30 `kill -9`s under `appendfsync always` with every acknowledged
//! SET read back.

use super::crash::set_until_killed;
use super::*;

/// A KVIMR database on a 1 GiB raw `imr` image in `dir`.
fn kvimr_database(dir: &Path) -> PathBuf {
    let p = dir.join("imr.img");
    ok(&tegula()
        .args(["disk", "create", "--profile", "imr", "--capacity", "1GiB"])
        .arg(&p)
        .output()
        .unwrap());
    ok(&tegula().args(["db", "create"]).arg(&p).output().unwrap());
    p
}

/// The store's lifetime sync count (`db stats --json`, `kvimr.lifetime.syncs`).
fn store_syncs(img: &Path) -> u64 {
    let out = ok(&tegula()
        .args(["db", "stats", "--json"])
        .arg(img)
        .output()
        .unwrap());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["kvimr"]["lifetime"]["syncs"]
        .as_u64()
        .unwrap_or_else(|| panic!("no KVIMR sync count: {v}"))
}

fn checks_out(img: &Path) {
    let out = ok(&tegula().args(["db", "check"]).arg(img).output().unwrap());
    assert!(out.ends_with("ok\n"), "{out}");
}

#[test]
fn serve_resp_answers_set_and_get_on_a_kvimr_image_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let img = kvimr_database(dir.path());
    let before = store_syncs(&img);
    let s = Served::start(&img, &["--appendfsync", "always"]);
    let mut c = s.client();
    assert_eq!(c.cmd(&[b"SET", b"foo", b"bar"]), b"+OK");
    assert_eq!(c.cmd(&[b"GET", b"foo"]), b"bar");
    for i in 0..200 {
        let k = format!("key{i}");
        assert_eq!(c.cmd(&[b"SET", k.as_bytes(), &vec![b'v'; 3000]]), b"+OK");
    }
    assert_eq!(c.cmd(&[b"DBSIZE"]), b":201");
    drop(c);
    s.signal(libc::SIGTERM);
    let (status, err) = s.wait();
    assert!(status.success(), "{err}");
    let s = Served::start(&img, &[]);
    let mut c = s.client();
    assert_eq!(c.cmd(&[b"GET", b"foo"]), b"bar");
    assert_eq!(c.cmd(&[b"GET", b"key199"]), vec![b'v'; 3000]);
    drop(c);
    s.signal(libc::SIGTERM);
    assert!(s.wait().0.success());
    // Every synced SET was a store sync, counted on the image.
    let after = store_syncs(&img);
    assert!(after >= before + 200, "syncs {before} -> {after}");
    checks_out(&img);
}

/// 30 times (`TEGULA_KILLS`): writers SET unique keys through `serve resp --appendfsync
/// always` on a KVIMR image, the server is killed with SIGKILL, and a new server reads back
/// every SET acknowledged in any round so far, exactly.
#[test]
fn kill_9_of_serve_resp_on_a_kvimr_image_loses_no_acknowledged_set() {
    let dir = tempfile::tempdir().unwrap();
    let img = kvimr_database(dir.path());
    let kills = std::env::var("TEGULA_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let mut acked_all: Vec<(String, String)> = Vec::new();
    let read_back = |s: &Served, acked: &[(String, String)], when: &str| {
        let mut c = s.client();
        for chunk in acked.chunks(256) {
            for (k, _) in chunk {
                c.send(&[b"GET", k.as_bytes()]).unwrap();
            }
            for (k, v) in chunk {
                let got = c.read().unwrap();
                assert!(
                    got == v.as_bytes(),
                    "{when}: {k}, acknowledged before a kill -9, reads {:?}",
                    String::from_utf8_lossy(&got)
                );
            }
        }
    };
    for round in 0..kills {
        let s = Served::start(&img, &["--appendfsync", "always"]);
        read_back(&s, &acked_all, &format!("round {round}"));
        let run = Duration::from_millis(300 + 37 * (round % 7));
        let acked = set_until_killed(s, &format!("r{round}"), 4, run);
        assert!(!acked.is_empty(), "round {round}: nothing acknowledged");
        acked_all.extend(acked);
    }
    let s = Served::start(&img, &[]);
    read_back(&s, &acked_all, "after the last round");
    s.signal(libc::SIGTERM);
    assert!(s.wait().0.success());
    checks_out(&img);
    eprintln!(
        "{kills} kills of serve resp on a KVIMR image: {} acknowledged SETs, none lost",
        acked_all.len()
    );
}
