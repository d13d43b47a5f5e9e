//! Regression tests of the FUSE mount, one per defect found with third-party suites
//! (bonnie++, pjdfstest, dd, a read-and-unlink loop), plus the profiler's counts against a
//! known sequence of calls, the pass-through mount, asynchronous close and `allow_other`.
//! Each skips with a visible message where FUSE is unavailable.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tegula_device::{Disk, ZonedDevice};
use tegula_fs::{mount, mount_passthrough, Fs, FsOptions, MountOptions, Mounted};

fn skip(test: &str) -> bool {
    match common::fuse_missing() {
        Some(w) => {
            let _ = writeln!(std::io::stderr(), "SKIPPED: {test}: {w}");
            true
        }
        None => false,
    }
}

/// A fresh file system on an in-memory drive of `mib` MiB in zones of `zone_mib`.
fn fresh(mib: u64, zone_mib: u64) -> Fs {
    let cfg = common::hm_smr(mib, zone_mib, 1);
    let dev: Arc<dyn ZonedDevice> = Arc::new(Disk::in_memory(cfg).unwrap());
    Fs::mkfs(dev, FsOptions::default()).unwrap()
}

fn mounted(fs: Fs, mp: &Path, opts: &MountOptions) -> Mounted {
    mount(fs, mp, opts).unwrap()
}

fn unmount(m: Mounted) {
    m.unmount(Duration::from_secs(120)).unwrap();
}

fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

fn dirs() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let mp = dir.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    (dir, mp)
}

/// Runs `body` on a fresh file system of `mib` MiB (zones of 16 MiB) mounted with the
/// default options, then unmounts it; skips `test` where FUSE is unavailable.
fn on_fresh_mount(test: &str, mib: u64, body: impl FnOnce(&Path, &Mounted)) {
    if skip(test) {
        return;
    }
    let (_d, mp) = dirs();
    let m = mounted(fresh(mib, 16), &mp, &MountOptions::default());
    body(&mp, &m);
    unmount(m);
}

/// A program that reads a directory and unlinks as it goes must not leave names behind
/// once the directory holds more than one getdents buffer (3,000 files left 1,364).
#[test]
fn read_and_unlink_in_one_pass_empties_a_large_directory() {
    on_fresh_mount(
        "read_and_unlink_in_one_pass_empties_a_large_directory",
        256,
        |mp, _| {
            let dir = mp.join("many");
            std::fs::create_dir(&dir).unwrap();
            for i in 0..3000 {
                std::fs::File::create(dir.join(format!("file-with-a-longish-name-{i:05}")))
                    .unwrap();
            }
            for e in std::fs::read_dir(&dir).unwrap() {
                std::fs::remove_file(e.unwrap().path()).unwrap();
            }
            let left = std::fs::read_dir(&dir).unwrap().count();
            assert_eq!(left, 0, "{left} names left after one pass");
            std::fs::remove_dir(&dir).unwrap();
        },
    );
}

/// With the writeback cache the kernel sends a SETATTR for an inode after its unlink; the
/// inode must live until the kernel's FORGET (`touch g; rm g; sync -f .` gave ENOENT).
#[test]
fn an_unlinked_inode_lives_until_the_kernel_forgets_it() {
    on_fresh_mount(
        "an_unlinked_inode_lives_until_the_kernel_forgets_it",
        256,
        |mp, _| {
            common::sh(
                mp,
                "touch g; rm g; sync -f .; echo x > h; cat h >/dev/null; rm h; sync -f .",
            );
            // An open file survives its unlink until closed, through the kernel's SETATTR too.
            let p = mp.join("open");
            let mut f = std::fs::File::create(&p).unwrap();
            std::fs::remove_file(&p).unwrap();
            f.write_all(b"still here").unwrap();
            f.set_len(5).unwrap();
            f.sync_all().unwrap();
            drop(f);
        },
    );
}

/// Names longer than 255 bytes are ENAMETOOLONG in every call that takes a name (lookup
/// said ENOENT).
#[test]
fn names_longer_than_255_bytes_are_enametoolong() {
    on_fresh_mount(
        "names_longer_than_255_bytes_are_enametoolong",
        256,
        |mp, _| {
            let long = mp.join("x".repeat(256));
            let ok = mp.join("x".repeat(255));
            std::fs::write(&ok, b"a").unwrap();
            let want = libc::ENAMETOOLONG;
            assert_eq!(errno(&std::fs::metadata(&long).unwrap_err()), want);
            assert_eq!(errno(&std::fs::remove_file(&long).unwrap_err()), want);
            assert_eq!(errno(&std::fs::remove_dir(&long).unwrap_err()), want);
            assert_eq!(errno(&std::fs::create_dir(&long).unwrap_err()), want);
            assert_eq!(errno(&std::fs::File::create(&long).unwrap_err()), want);
            assert_eq!(errno(&std::fs::hard_link(&ok, &long).unwrap_err()), want);
            assert_eq!(errno(&std::fs::rename(&ok, &long).unwrap_err()), want);
            assert_eq!(errno(&std::fs::rename(&long, &ok).unwrap_err()), want);
        },
    );
}

/// FIFOs, UNIX sockets and device nodes can be made; the kernel serves them.
#[test]
fn fifos_sockets_and_device_nodes_can_be_created() {
    on_fresh_mount(
        "fifos_sockets_and_device_nodes_can_be_created",
        256,
        |mp, _| {
            let sock = mp.join("s.sock");
            let l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
            let mut c = std::os::unix::net::UnixStream::connect(&sock).unwrap();
            let (mut a, _) = l.accept().unwrap();
            c.write_all(b"ping").unwrap();
            let mut buf = [0u8; 4];
            a.read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"ping");
            assert!(std::fs::symlink_metadata(&sock)
                .unwrap()
                .file_type()
                .is_socket());
            let text = common::sh(
                mp,
                "mkfifo p && mknod c c 1 3 && mknod b b 7 0 && stat -c '%F %t %T' c b",
            );
            assert!(text.contains("character special file 1 3"), "{text}");
            assert!(text.contains("block special file 7 0"), "{text}");
            assert!(std::fs::symlink_metadata(mp.join("p"))
                .unwrap()
                .file_type()
                .is_fifo());
            drop((a, c, l));
        },
    );
}

/// With the writeback cache, `dd` into a full drive must fail at `write`, not run on to a
/// file far larger than the drive and fail only at `close`.
#[test]
fn writes_fail_with_enospc_once_the_drive_cannot_hold_them() {
    if skip("writes_fail_with_enospc_once_the_drive_cannot_hold_them") {
        return;
    }
    let (_d, mp) = dirs();
    let fs = fresh(256, 16);
    let cap = fs.statfs().blocks * fs.statfs().block_size;
    let m = mounted(fs, &mp, &MountOptions::default());
    let mut f = std::fs::File::create(mp.join("big")).unwrap();
    let chunk = vec![0x5au8; 1 << 20];
    let mut written = 0u64;
    let err = loop {
        match f.write(&chunk) {
            Ok(n) => written += n as u64,
            Err(e) => break e,
        }
        assert!(
            written <= 4 * cap,
            "wrote {written} bytes to a {cap}-byte drive"
        );
    };
    assert_eq!(errno(&err), libc::ENOSPC, "{err}");
    assert!(
        written <= cap,
        "wrote {written} bytes to a {cap}-byte drive"
    );
    drop(f);
    // Issue 33 item 12: once the writer was told ENOSPC, reads of the file (a new handle: `cat`,
    // `md5sum`, `cp`) used to fail with ENOSPC at its end until a truncate or a remount. They
    // read what the drive holds; after room is freed, an append and its fsync work, and reads
    // still do.
    let kept = std::fs::read(mp.join("big")).expect("a read after ENOSPC");
    assert!(kept.iter().all(|&b| b == 0x5a) && kept.len() as u64 <= written);
    std::fs::write(mp.join("small"), vec![1u8; 1 << 20]).ok();
    std::fs::remove_file(mp.join("small")).ok();
    let mut g = std::fs::OpenOptions::new()
        .append(true)
        .open(mp.join("big"))
        .unwrap();
    std::fs::remove_file(mp.join("big")).unwrap();
    g.write_all(b"after").ok();
    drop(g);
    let mut h = std::fs::File::create(mp.join("again")).unwrap();
    h.write_all(&chunk).unwrap();
    h.sync_all().unwrap();
    drop(h);
    assert_eq!(std::fs::read(mp.join("again")).unwrap(), chunk);
    unmount(m);
}

/// After fill, delete and refill cycles, the free space statfs reports can be written
/// (144-177 MiB were reported free that no write could use until a remount).
#[test]
fn statfs_free_space_can_be_written_after_fill_delete_refill() {
    on_fresh_mount(
        "statfs_free_space_can_be_written_after_fill_delete_refill",
        512,
        |mp, _| {
            let chunk = vec![0xa5u8; 1 << 20];
            let fill = |name: &str| -> u64 {
                let mut f = std::fs::File::create(mp.join(name)).unwrap();
                let mut n = 0u64;
                while f.write_all(&chunk).is_ok() {
                    n += chunk.len() as u64;
                }
                drop(f);
                n
            };
            let free = |p: &Path| {
                let s = nix_statvfs(p);
                s.0 * s.1
            };
            for round in 0..3 {
                let reported = free(mp);
                let got = fill(&format!("fill{round}"));
                assert!(
                    got as f64 >= reported as f64 * 0.97,
                    "round {round}: statfs said {reported} bytes free, {got} could be written"
                );
                std::fs::remove_file(mp.join(format!("fill{round}"))).unwrap();
                // Half-fill with small files between rounds, then delete them too.
                for i in 0..50 {
                    std::fs::write(mp.join(format!("s{i}")), &chunk[..300_000]).unwrap();
                }
                for i in 0..50 {
                    std::fs::remove_file(mp.join(format!("s{i}"))).unwrap();
                }
            }
        },
    );
}

/// A write that fits only once a deleted file still held open is freed waits for its
/// release instead of failing with `ENOSPC`: the kernel sends a file's last release in the
/// background, after an `unlink` and a `write` that a program issued later (the fill,
/// delete, refill test above failed this way under load).
#[test]
fn a_write_waits_for_the_space_of_a_deleted_file_being_closed() {
    on_fresh_mount(
        "a_write_waits_for_the_space_of_a_deleted_file_being_closed",
        256,
        |mp, _| {
            let chunk = vec![0x5au8; 1 << 20];
            let mut big = std::fs::File::create(mp.join("big")).unwrap();
            let mut filled = 0u64;
            while big.write_all(&chunk).is_ok() {
                filled += chunk.len() as u64;
            }
            assert!(filled > 100 << 20, "only {filled} bytes fitted");
            std::fs::remove_file(mp.join("big")).unwrap();
            // The deleted file is still open: its space is not free until it is closed.
            // Less than one chunk was left, so two chunks fit only in the freed space.
            let two = [&chunk[..], &chunk[..]].concat();
            let closer = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(500));
                drop(big);
            });
            let start = std::time::Instant::now();
            std::fs::write(mp.join("after"), &two).unwrap();
            closer.join().unwrap();
            assert!(
                start.elapsed() >= Duration::from_millis(400),
                "the write found room before the deleted file was closed"
            );
            assert_eq!(std::fs::read(mp.join("after")).unwrap(), two);
        },
    );
}

/// (block size, free blocks) of the file system at `p`.
fn nix_statvfs(p: &Path) -> (u64, u64) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a zeroed statvfs is valid to overwrite; the path is a C string.
    unsafe {
        let mut s: libc::statvfs = std::mem::zeroed();
        assert_eq!(libc::statvfs(c.as_ptr(), &mut s), 0);
        (s.f_frsize, s.f_bavail)
    }
}

/// The profiler counts a known sequence of calls (and the bytes they moved).
#[test]
fn the_profiler_counts_a_known_sequence_of_calls() {
    on_fresh_mount(
        "the_profiler_counts_a_known_sequence_of_calls",
        256,
        |mp, m| {
            let p = m.profiler();
            p.take();
            std::fs::create_dir(mp.join("d")).unwrap();
            std::fs::create_dir(mp.join("d/e")).unwrap();
            let mut f = std::fs::File::create(mp.join("d/f")).unwrap();
            f.write_all(&vec![1u8; 100_000]).unwrap();
            f.sync_all().unwrap();
            drop(f);
            std::os::unix::fs::symlink("f", mp.join("d/l")).unwrap();
            std::fs::hard_link(mp.join("d/f"), mp.join("d/g")).unwrap();
            std::fs::rename(mp.join("d/g"), mp.join("d/h")).unwrap();
            std::fs::remove_file(mp.join("d/h")).unwrap();
            std::fs::remove_file(mp.join("d/l")).unwrap();
            std::fs::remove_dir(mp.join("d/e")).unwrap();
            let d = p.take();
            let calls = |op: &str| d.get(op).unwrap().calls;
            assert_eq!(calls("mkdir"), 2);
            assert_eq!(calls("create"), 1);
            assert_eq!(calls("symlink"), 1);
            assert_eq!(calls("link"), 1);
            assert_eq!(calls("rename"), 1);
            assert_eq!(calls("unlink"), 2);
            assert_eq!(calls("rmdir"), 1);
            assert_eq!(calls("fsync"), 1);
            assert_eq!(d.get("write").unwrap().bytes, 100_000);
            assert!(calls("lookup") >= 1);
            assert!(d
                .to_json()
                .contains("\"op\":\"mkdir\",\"calls\":2,\"errors\":0"));
            // The counters restarted.
            assert_eq!(p.take().get("mkdir").unwrap().calls, 0);
        },
    );
}

/// Closing a file returns before its data is on the drive (the writer thread writes it);
/// reads see the data meanwhile, and everything is there after a remount.
#[test]
fn closed_files_are_written_behind_and_read_back_meanwhile() {
    if skip("closed_files_are_written_behind_and_read_back_meanwhile") {
        return;
    }
    let (d, mp) = dirs();
    let cfg = common::hm_smr(256, 16, 1);
    let img = d.path().join("fs.img");
    let disk = Disk::create_image(&img, cfg).unwrap();
    let dev: Arc<dyn ZonedDevice> = Arc::new(disk);
    let fs = Fs::mkfs(dev, FsOptions::default()).unwrap();
    let m = mounted(fs, &mp, &MountOptions::default());
    for i in 0..20u8 {
        std::fs::write(mp.join(format!("f{i}")), vec![i; 3 << 20]).unwrap();
        assert_eq!(
            std::fs::read(mp.join(format!("f{i}"))).unwrap(),
            vec![i; 3 << 20]
        );
    }
    let mut last = std::fs::OpenOptions::new()
        .append(true)
        .open(mp.join("f19"))
        .unwrap();
    last.write_all(b"tail").unwrap();
    last.sync_all().unwrap();
    drop(last);
    unmount(m);
    let disk = Disk::open_image(&img, Default::default()).unwrap();
    let dev: Arc<dyn ZonedDevice> = Arc::new(disk);
    let mut fs = Fs::open(dev, FsOptions::default()).unwrap();
    for i in 0..20u8 {
        let a = fs
            .lookup(tegula_fs::ROOT, format!("f{i}").as_bytes())
            .unwrap();
        let mut want = vec![i; 3 << 20];
        if i == 19 {
            want.extend_from_slice(b"tail");
        }
        assert!(fs.read(a.ino, 0, want.len() + 1).unwrap() == want, "f{i}");
    }
    assert!(fs.check(true).unwrap().problems.is_empty());
}

/// The pass-through mount forwards every request to its directory and counts it.
#[test]
fn the_passthrough_mount_forwards_and_counts() {
    if skip("the_passthrough_mount_forwards_and_counts") {
        return;
    }
    let (d, mp) = dirs();
    let back = d.path().join("back");
    std::fs::create_dir(&back).unwrap();
    std::fs::write(back.join("old"), b"from before").unwrap();
    let m = mount_passthrough(&back, &mp, &MountOptions::default()).unwrap();
    let p = m.profiler();
    assert_eq!(std::fs::read(mp.join("old")).unwrap(), b"from before");
    std::fs::create_dir(mp.join("sub")).unwrap();
    std::fs::write(mp.join("sub/new"), b"hello").unwrap();
    std::fs::rename(mp.join("sub/new"), mp.join("sub/renamed")).unwrap();
    std::os::unix::fs::symlink("renamed", mp.join("sub/link")).unwrap();
    let names: Vec<String> = std::fs::read_dir(mp.join("sub"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert_eq!(std::fs::read(mp.join("sub/link")).unwrap(), b"hello");
    std::fs::remove_file(mp.join("sub/link")).unwrap();
    let d2 = p.take();
    assert_eq!(d2.source, "passthrough");
    assert_eq!(d2.get("mkdir").unwrap().calls, 1);
    assert_eq!(d2.get("rename").unwrap().calls, 1);
    assert_eq!(d2.get("unlink").unwrap().calls, 1);
    unmount(m);
    assert_eq!(std::fs::read(back.join("sub/renamed")).unwrap(), b"hello");
    assert!(!back.join("sub/link").exists());
}

/// Without `allow_other` other users cannot enter the mount; with it they can (the kernel
/// then checks modes).
#[test]
fn allow_other_lets_other_users_in() {
    if skip("allow_other_lets_other_users_in") {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || Command::new("setpriv").arg("--help").output().is_err() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: allow_other_lets_other_users_in: needs root and setpriv"
        );
        return;
    }
    let as_nobody = |mp: &Path| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "ls"])
            .arg(mp)
            .output()
            .unwrap()
            .status
            .success()
    };
    for allow in [false, true] {
        let (d, mp) = dirs();
        // SAFETY: chmod of a path we own to let the other user reach the mount point.
        let c = std::ffi::CString::new(d.path().as_os_str().as_encoded_bytes()).unwrap();
        unsafe { libc::chmod(c.as_ptr(), 0o755) };
        let opts = MountOptions {
            allow_other: allow,
            ..MountOptions::default()
        };
        let m = mounted(fresh(256, 16), &mp, &opts);
        assert_eq!(as_nobody(&mp), allow, "allow_other {allow}");
        unmount(m);
    }
}

/// bonnie++'s file-creation test (`-n 4:0:0:1`: 4,096 files in one directory, created,
/// read, deleted) failed with "rmdir: Directory not empty" while directory offsets were
/// positions in the current listing.
#[test]
fn bonnie_file_creation_test_passes() {
    if Command::new("bonnie++").arg("-h").output().is_err() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: bonnie_file_creation_test_passes: bonnie++ is not installed"
        );
        return;
    }
    on_fresh_mount("bonnie_file_creation_test_passes", 512, |mp, _| {
        let out = Command::new("bonnie++")
            .args(["-d"])
            .arg(mp)
            .args(["-n", "4:0:0:1", "-s", "0", "-u", "root", "-q"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "bonnie++ failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(std::fs::read_dir(mp).unwrap().count(), 0);
    });
}
