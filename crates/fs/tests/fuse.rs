//! The file system mounted with FUSE, driven by real programs (cp, cat, mv, rm, ls, sync,
//! sha256sum), unmounted and mounted again. Skips with a visible message where FUSE is
//! unavailable.
#![allow(clippy::unwrap_used)]

use std::io::Write as _; // skips are written past the test harness's capture, so CI shows them

mod common;

use common::*;
use std::path::Path;

fn mount(image: &Path, mp: &Path) -> Result<FuseMount, String> {
    mount_with(image, mp, true)
}

fn mount_with(image: &Path, mp: &Path, writeback: bool) -> Result<FuseMount, String> {
    mount_image(image, mp, writeback)
}

#[test]
fn shell_tools_work_on_the_mount_and_data_survives_a_remount() {
    if let Some(why) = fuse_missing() {
        let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), 16);
    let mp = tmp.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir_all(src.join("sub/deeper")).unwrap();
    for (i, size) in [0usize, 1, 4095, 4096, 100_000, 3_000_000, 7_000_000]
        .iter()
        .enumerate()
    {
        let data: Vec<u8> = (0..*size).map(|j| (j * 31 + i * 7) as u8).collect();
        let dir = if i % 3 == 0 {
            src.join("sub")
        } else if i % 3 == 1 {
            src.join("sub/deeper")
        } else {
            src.clone()
        };
        std::fs::write(dir.join(format!("file{i}")), data).unwrap();
    }
    let m = match mount(&img, &mp) {
        Ok(m) => m,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "SKIPPED: FUSE mount failed: {e}");
            return;
        }
    };
    let want = sh(&src, "find . -type f | sort | xargs sha256sum");
    let t = tmp.path();
    sh(t, "cp -r src mnt/copy && sync");
    assert_eq!(
        sh(&mp.join("copy"), "find . -type f | sort | xargs sha256sum"),
        want
    );
    sh(
        t,
        "mv mnt/copy/file2 mnt/copy/sub/moved && mv mnt/copy/sub/moved mnt/copy/file2",
    );
    sh(
        t,
        "echo one > mnt/a && echo two > mnt/b && mv -f mnt/b mnt/a && test \"$(cat mnt/a)\" = two",
    );
    sh(
        t,
        "echo x >> mnt/a && echo y >> mnt/a && test \"$(cat mnt/a)\" = \"$(printf 'two\\nx\\ny')\"",
    );
    sh(
        t,
        "mkdir mnt/d && touch mnt/d/f && rm mnt/d/f && rmdir mnt/d && ! ls mnt/d 2>/dev/null",
    );
    sh(
        t,
        "ln mnt/a mnt/hard && ln -s a mnt/soft && test \"$(cat mnt/soft)\" = \"$(cat mnt/hard)\"",
    );
    sh(t, "truncate -s 10 mnt/a && test $(stat -c %s mnt/a) = 10");
    sh(
        t,
        "dd if=/dev/zero of=mnt/big bs=1M count=12 status=none && sync mnt/big && rm mnt/big",
    );
    let ls = sh(t, "ls mnt");
    assert!(ls.contains("copy") && ls.contains("a"), "{ls}");
    let df = sh(t, "df -B1 --output=size,avail mnt | tail -1");
    let nums: Vec<u64> = df.split_whitespace().map(|n| n.parse().unwrap()).collect();
    assert!(
        nums[0] > 200 << 20 && nums[1] > 100 << 20 && nums[1] < nums[0],
        "{df}"
    );
    m.unmount();
    let m = mount(&img, &mp).expect("remount");
    assert_eq!(
        sh(&mp.join("copy"), "find . -type f | sort | xargs sha256sum"),
        want
    );
    sh(
        t,
        "test $(stat -c %s mnt/a) = 10 && rm -r mnt/copy && test -z \"$(ls mnt/ | grep copy)\"",
    );
    m.unmount();
    let mut fs = common::open_read_only(&img);
    let r = fs.check(true).unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
}

/// Small unaligned writes (LevelDB's table blocks), appends from two descriptors interleaved,
/// an overwrite in the middle, a truncate and fsync, with and without the kernel's writeback
/// cache (which turns appends into writes at the kernel's end of file and writes pages back
/// later, in any order): the bytes are right on the mount, after a remount, and `check` is
/// clean.
#[test]
fn appends_unaligned_writes_and_truncates_are_right_with_and_without_the_writeback_cache() {
    use std::io::{Seek, SeekFrom, Write};
    if let Some(why) = fuse_missing() {
        let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
        return;
    }
    for writeback in [true, false] {
        let tmp = tempfile::tempdir().unwrap();
        let img = image(tmp.path(), 16);
        let mp = tmp.path().join("mnt");
        std::fs::create_dir(&mp).unwrap();
        let m = match mount_with(&img, &mp, writeback) {
            Ok(m) => m,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "SKIPPED: FUSE mount failed: {e}");
                return;
            }
        };
        let mut table = Vec::new();
        let mut f = std::fs::File::create(mp.join("t.ldb")).unwrap();
        for i in 0..700u32 {
            let block: Vec<u8> = (0..4121u32).map(|j| (i * 13 + j) as u8).collect();
            f.write_all(&block).unwrap();
            table.extend_from_slice(&block);
        }
        f.seek(SeekFrom::Start(1_000_003)).unwrap();
        f.write_all(&[0xab; 10_000]).unwrap();
        table[1_000_003..1_010_003].fill(0xab);
        f.sync_data().unwrap();
        drop(f);
        let open_append = || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(mp.join("log"))
                .unwrap()
        };
        let (mut a, mut b) = (open_append(), open_append());
        let mut log = Vec::new();
        for i in 0..300u32 {
            let (x, y) = (
                vec![b'a' + (i % 26) as u8; 37],
                vec![b'0' + (i % 10) as u8; 11],
            );
            a.write_all(&x).unwrap();
            b.write_all(&y).unwrap();
            log.extend_from_slice(&x);
            log.extend_from_slice(&y);
        }
        drop((a, b));
        let g = std::fs::OpenOptions::new()
            .write(true)
            .open(mp.join("t.ldb"))
            .unwrap();
        g.set_len(2_000_001).unwrap();
        table.truncate(2_000_001);
        g.sync_all().unwrap();
        drop(g);
        assert!(
            std::fs::read(mp.join("t.ldb")).unwrap() == table,
            "{writeback}"
        );
        assert!(std::fs::read(mp.join("log")).unwrap() == log, "{writeback}");
        m.unmount();
        let m = mount_with(&img, &mp, writeback).expect("remount");
        assert!(
            std::fs::read(mp.join("t.ldb")).unwrap() == table,
            "{writeback}"
        );
        assert!(std::fs::read(mp.join("log")).unwrap() == log, "{writeback}");
        m.unmount();
        let mut fs = common::open_read_only(&img);
        let r = fs.check(true).unwrap();
        assert!(r.problems.is_empty(), "{writeback}: {:?}", r.problems);
    }
}
