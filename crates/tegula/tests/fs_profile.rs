//! `tegula fs mount` as scripts use it: a background mount (and a pass-through mount) whose
//! per-operation profile `tegula fs profile` dumps as the stable JSON, counting a known
//! sequence of calls; the dump on unmount; `tegula fs stats` with the cleaning estimate.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// Unmounts and waits for the mount process (its pid from "mounted at … (process PID, …").
fn unmount_and_wait(mp: &Path, mount_out: &str) {
    let pid: u32 = mount_out
        .split("(process ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|s| s.trim().parse().ok())
        .unwrap();
    unmount(mp);
    let t = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "mount process {pid} lingers"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn calls(v: &Value, op: &str) -> u64 {
    v["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == op)
        .unwrap_or_else(|| panic!("no {op} in {v}"))["calls"]
        .as_u64()
        .unwrap()
}

/// A known sequence: 2 mkdir, 1 create (+ 100,000 bytes written and fsynced), 1 rename,
/// 1 unlink, 1 rmdir.
fn known_sequence(mp: &Path) {
    std::fs::create_dir(mp.join("a")).unwrap();
    std::fs::create_dir(mp.join("a/b")).unwrap();
    let mut f = std::fs::File::create(mp.join("a/f")).unwrap();
    std::io::Write::write_all(&mut f, &vec![7u8; 100_000]).unwrap();
    f.sync_all().unwrap();
    drop(f);
    std::fs::rename(mp.join("a/f"), mp.join("a/g")).unwrap();
    std::fs::remove_file(mp.join("a/g")).unwrap();
    std::fs::remove_dir(mp.join("a/b")).unwrap();
}

fn check_profile(v: &Value, source: &str) {
    assert_eq!(v["format"], "tegula-fs-profile");
    assert_eq!(v["version"], 1);
    assert_eq!(v["source"], source);
    assert_eq!(calls(v, "mkdir"), 2);
    assert_eq!(calls(v, "create"), 1);
    assert_eq!(calls(v, "rename"), 1);
    assert_eq!(calls(v, "unlink"), 1);
    assert_eq!(calls(v, "rmdir"), 1);
    assert_eq!(calls(v, "fsync"), 1);
    let w = v["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "write")
        .unwrap();
    assert_eq!(w["bytes"], 100_000);
    assert!(v["total_calls"].as_u64().unwrap() >= 7);
}

#[test]
fn tegula_fs_profile_dumps_the_counts_of_a_known_sequence_and_resets_them() {
    if let Some(why) = fuse_missing() {
        skip(&format!("tegula_fs_profile_dumps…: {why}"));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "fs.img", "hm-smr", "1GiB", &[]);
    ok(&["fs", "mkfs", &img, "--placement", "best-fit"]);
    let mp = dir.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    let profile = dir.path().join("p.jsonl");
    let out = stdout(&ok(&[
        "fs",
        "mount",
        &img,
        mp.to_str().unwrap(),
        "--log",
        dir.path().join("log").to_str().unwrap(),
        "--profile",
        profile.to_str().unwrap(),
    ]));
    // Start from zero, then the known sequence.
    ok(&["fs", "profile", mp.to_str().unwrap()]);
    known_sequence(&mp);
    let v = ok_json(&["fs", "profile", mp.to_str().unwrap()]);
    check_profile(&v, "tegula");
    // The counters restarted at the dump.
    let again = ok_json(&["fs", "profile", mp.to_str().unwrap()]);
    assert_eq!(calls(&again, "mkdir"), 0);
    unmount_and_wait(&mp, &out);
    // Every dump, and the last one at unmount, is a line of the profile file.
    let lines = std::fs::read_to_string(&profile).unwrap();
    assert_eq!(lines.lines().count(), 4, "{lines}");
    // The placement mkfs chose is the mount's; stats estimates the cleaning cost.
    let s = ok_json(&["fs", "stats", &img, "--json"]);
    assert_eq!(s["placement"], "best-fit");
    assert_eq!(s["gc_estimate"]["written"], 100_000);
    assert!(s["gc_estimate"]["space_overhead"].as_f64().unwrap() >= 1.0);
    ok(&["fs", "check", &img]);
}

#[test]
fn the_passthrough_mount_profiles_any_directory() {
    if let Some(why) = fuse_missing() {
        skip(&format!(
            "the_passthrough_mount_profiles_any_directory: {why}"
        ));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let back = dir.path().join("back");
    std::fs::create_dir(&back).unwrap();
    let mp = dir.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    let out = stdout(&ok(&[
        "fs",
        "mount",
        "--passthrough",
        back.to_str().unwrap(),
        mp.to_str().unwrap(),
        "--log",
        dir.path().join("log").to_str().unwrap(),
    ]));
    ok(&["fs", "profile", mp.to_str().unwrap()]);
    known_sequence(&mp);
    let v = ok_json(&["fs", "profile", mp.to_str().unwrap()]);
    check_profile(&v, "passthrough");
    unmount_and_wait(&mp, &out);
    assert!(back.join("a").is_dir());
    assert!(!back.join("a/b").exists());
    // Not a mount: a clear error.
    let e = fails(&["fs", "profile", dir.path().to_str().unwrap()]);
    assert!(e.contains("not a tegula fs mount"), "{e}");
}

/// The files a mount leaves in `tmp`'s registry directory (logs, profiles, registry entries).
fn left_in(tmp: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(tmp.join("tegula-fs-mounts"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Mounts do not pile files up in the temporary directory: a mount that fails shows its log
/// and removes it, and the mounts of one mount point share one log and one profile file.
#[test]
fn mounts_leave_one_log_per_mount_point_and_a_failed_mount_none() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mp = dir.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    let mount = |img: &str| {
        tegula_cmd()
            .env("TMPDIR", &tmp)
            .args(["fs", "mount", img, mp.to_str().unwrap()])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    // No file system on it: the mount process fails before FUSE is involved.
    let bare = image(dir.path(), "bare.img", "hm-smr", "1GiB", &[]);
    let o = mount(&bare);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("mount process exited"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        left_in(&tmp),
        Vec::<String>::new(),
        "a failed mount left files"
    );

    if let Some(why) = fuse_missing() {
        skip(&format!("mounts_leave_one_log…: the mounts: {why}"));
        return;
    }
    let img = image(dir.path(), "fs.img", "hm-smr", "1GiB", &[]);
    ok(&["fs", "mkfs", &img]);
    for _ in 0..2 {
        let o = mount(&img);
        assert!(o.status.success(), "{}", stderr(&o));
        unmount_and_wait(&mp, &String::from_utf8_lossy(&o.stdout));
    }
    let left = left_in(&tmp);
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(
        left[0].ends_with(".log") && left[1].ends_with(".profile.jsonl"),
        "{left:?}"
    );
}
