//! POSIX behaviours programs depend on, through the core API.

mod common;

use common::*;
use tegula_fs::{CleanKind, CleanPolicy, Fs, FsError, FsOptions, SetAttr, ROOT};

#[test]
fn unlinked_open_file_stays_readable_until_released_then_its_space_is_dead() {
    let d = disk(16, 2);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let f = fs.create(ROOT, b"a", 0o644, 0, 0).unwrap().ino;
    fs.open_file(f).unwrap();
    fs.write(f, 0, &vec![3u8; 300_000], false).unwrap();
    fs.fsync(f).unwrap();
    fs.unlink(ROOT, b"a").unwrap();
    assert!(matches!(fs.lookup(ROOT, b"a"), Err(FsError::NotFound)));
    assert_eq!(fs.read(f, 299_990, 100).unwrap(), vec![3u8; 10]);
    let live_before: u64 = fs.zone_stats().iter().map(|z| z.live).sum();
    assert_eq!(live_before, 300_000);
    fs.release(f).unwrap();
    assert!(fs.getattr(f).is_err());
    let live_after: u64 = fs.zone_stats().iter().map(|z| z.live).sum();
    assert_eq!(live_after, 0);
    assert!(fs.check(true).unwrap().problems.is_empty());
}

/// A deleted file the kernel still holds (its FORGET not yet sent) but nobody has open: its
/// data is dead at once, so a writer that needs the space need not wait for the FORGET.
#[test]
fn a_deleted_file_the_kernel_still_holds_frees_its_data_at_once() {
    let d = disk(16, 2);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let f = fs.create(ROOT, b"a", 0o644, 0, 0).unwrap().ino;
    fs.remember(f);
    fs.open_file(f).unwrap();
    fs.write(f, 0, &vec![3u8; 300_000], false).unwrap();
    fs.fsync(f).unwrap();
    fs.write(f, 300_000, &[4u8; 1000], false).unwrap();
    fs.release(f).unwrap();
    let live = |fs: &Fs| -> u64 { fs.zone_stats().iter().map(|z| z.live).sum() };
    assert_eq!(live(&fs), 301_000);
    fs.unlink(ROOT, b"a").unwrap();
    assert_eq!(live(&fs), 0, "the data of the held inode is dead");
    assert!(fs.getattr(f).is_ok(), "the inode lives until the FORGET");
    assert!(fs.check(true).unwrap().problems.is_empty());
    fs.forget(f, 1).unwrap();
    assert!(fs.getattr(f).is_err());
    assert!(fs.check(true).unwrap().problems.is_empty());
}

#[test]
fn unlinked_open_file_is_freed_at_the_next_mount_after_a_crash() {
    let d = disk(16, 2);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let f = fs.create(ROOT, b"a", 0o644, 0, 0).unwrap().ino;
    fs.open_file(f).unwrap();
    fs.write(f, 0, &[1u8; 5000], false).unwrap();
    fs.unlink(ROOT, b"a").unwrap();
    fs.fsync(f).unwrap();
    d.power_cut();
    drop(fs);
    d.power_on();
    let mut fs = Fs::open(zoned(&d), small_opts()).unwrap();
    assert!(fs.getattr(f).is_err());
    assert!(fs.check(true).unwrap().problems.is_empty());
}

#[test]
fn rename_replaces_atomically_and_survives_a_crash() {
    let d = disk(16, 2);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let cur = fs.create(ROOT, b"CURRENT", 0o644, 0, 0).unwrap().ino;
    fs.write(cur, 0, b"MANIFEST-000001\n", false).unwrap();
    fs.fsync(cur).unwrap();
    let tmp = fs.create(ROOT, b"CURRENT.tmp", 0o644, 0, 0).unwrap().ino;
    fs.write(tmp, 0, b"MANIFEST-000002\n", false).unwrap();
    fs.fsync(tmp).unwrap();
    fs.rename(ROOT, b"CURRENT.tmp", ROOT, b"CURRENT", false)
        .unwrap();
    fs.fsync_dir(ROOT).unwrap();
    assert!(matches!(
        fs.rename(ROOT, b"CURRENT", ROOT, b"CURRENT", true),
        Err(FsError::Exists)
    ));
    d.power_cut();
    drop(fs);
    d.power_on();
    let mut fs = Fs::open(zoned(&d), small_opts()).unwrap();
    let a = fs.lookup(ROOT, b"CURRENT").unwrap();
    assert_eq!(fs.read(a.ino, 0, 100).unwrap(), b"MANIFEST-000002\n");
    assert!(fs.lookup(ROOT, b"CURRENT.tmp").is_err());
    assert!(fs.check(true).unwrap().problems.is_empty());
}

#[test]
fn hard_links_share_data_and_count_links() {
    let d = disk(16, 2);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let dir = fs.mkdir(ROOT, b"d", 0o755, 0, 0).unwrap().ino;
    let f = fs.create(ROOT, b"a", 0o644, 0, 0).unwrap().ino;
    fs.write(f, 0, b"hello", false).unwrap();
    let a = fs.link(f, dir, b"b").unwrap();
    assert_eq!(a.nlink, 2);
    fs.unlink(ROOT, b"a").unwrap();
    let b = fs.lookup(dir, b"b").unwrap();
    assert_eq!((b.ino, b.nlink), (f, 1));
    assert_eq!(fs.read(f, 0, 10).unwrap(), b"hello");
    assert_eq!(fs.getattr(ROOT).unwrap().nlink, 3);
    assert!(matches!(fs.rmdir(ROOT, b"d"), Err(FsError::NotEmpty)));
    assert!(matches!(fs.unlink(ROOT, b"d"), Err(FsError::IsDir)));
    fs.close().unwrap();
    let mut fs = Fs::open(zoned(&d), small_opts()).unwrap();
    assert!(fs.check(true).unwrap().problems.is_empty());
}

#[test]
fn append_writes_go_to_the_end_and_truncate_extends_with_zeros() {
    let d = disk(16, 2);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let f = fs.create(ROOT, b"log", 0o644, 0, 0).unwrap().ino;
    fs.write(f, 0, b"abc", true).unwrap();
    assert_eq!(fs.write(f, 0, b"def", true).unwrap(), 3);
    fs.fsync(f).unwrap();
    assert_eq!(fs.write(f, 0, b"g", true).unwrap(), 6);
    fs.setattr(
        f,
        &SetAttr {
            size: Some(10),
            ..SetAttr::default()
        },
    )
    .unwrap();
    assert_eq!(fs.read(f, 0, 100).unwrap(), b"abcdefg\0\0\0");
    fs.setattr(
        f,
        &SetAttr {
            size: Some(2),
            ..SetAttr::default()
        },
    )
    .unwrap();
    fs.fsync(f).unwrap();
    d.power_cut();
    drop(fs);
    d.power_on();
    let fs = Fs::open(zoned(&d), small_opts()).unwrap();
    assert_eq!(fs.read(f, 0, 100).unwrap(), b"ab");
}

#[test]
fn statfs_reports_real_free_space_and_a_full_disk_gives_enospc_losing_nothing() {
    let d = disk(8, 1); // 6 sequential zones of 1 MiB
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let s0 = fs.statfs();
    assert_eq!(s0.blocks * s0.block_size, 5 << 20);
    assert!(s0.free_blocks * s0.block_size > 4 << 20);
    let mut written = Vec::new();
    let mut enospc = false;
    for i in 0..100 {
        let name = format!("f{i}");
        let f = fs.create(ROOT, name.as_bytes(), 0o644, 0, 0).unwrap().ino;
        let data = vec![i as u8; 200_000];
        match fs.write(f, 0, &data, false).and_then(|_| fs.fsync(f)) {
            Ok(()) => written.push((name, data)),
            Err(FsError::NoSpace(_)) => {
                enospc = true;
                fs.unlink(ROOT, name.as_bytes()).unwrap();
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(enospc);
    assert!(fs.statfs().free_blocks * 4096 < 400_000);
    assert!(written.len() >= 15, "{}", written.len());
    // Deleting makes room again (through the cleaner).
    for (name, _) in written.drain(..8) {
        fs.unlink(ROOT, name.as_bytes()).unwrap();
    }
    let f = fs.create(ROOT, b"again", 0o644, 0, 0).unwrap().ino;
    fs.write(f, 0, &vec![9u8; 1_000_000], false).unwrap();
    fs.fsync(f).unwrap();
    written.push(("again".into(), vec![9u8; 1_000_000]));
    fs.close().unwrap();
    let mut fs = Fs::open(zoned(&d), small_opts()).unwrap();
    for (name, data) in &written {
        let a = fs.lookup(ROOT, name.as_bytes()).unwrap();
        assert_eq!(&fs.read(a.ino, 0, data.len()).unwrap(), data, "{name}");
    }
    assert!(fs.check(true).unwrap().problems.is_empty());
}

#[test]
fn cleaner_picks_the_deadest_zone_relocates_live_data_and_resets_it() {
    let d = disk(12, 1);
    let opts = FsOptions {
        clean: CleanPolicy::Whole,
        ..small_opts()
    };
    let mut fs = Fs::mkfs(zoned(&d), opts.clone()).unwrap();
    let keep = fs.create(ROOT, b"keep", 0o644, 0, 0).unwrap().ino;
    let junk = fs.create(ROOT, b"junk", 0o644, 0, 0).unwrap().ino;
    for i in 0..16u64 {
        fs.write(keep, i * 60_000, &vec![i as u8 + 1; 60_000], false)
            .unwrap();
        fs.fsync(keep).unwrap();
        fs.write(junk, i * 60_000, &vec![0xee; 60_000], false)
            .unwrap();
        fs.fsync(junk).unwrap();
    }
    fs.unlink(ROOT, b"junk").unwrap();
    fs.sync_all().unwrap();
    let c = fs.clean_victim().unwrap();
    let (victim, dead) = (c.zone, c.gain - c.live);
    assert!(dead >= 200_000, "{dead}");
    let r = fs.clean().unwrap().unwrap();
    assert_eq!(r.zone, victim);
    assert_eq!(r.kind, CleanKind::Whole);
    let z = fs
        .zone_stats()
        .into_iter()
        .find(|z| z.zone == victim)
        .unwrap();
    assert_eq!((z.used, z.live), (0, 0));
    let want: Vec<u8> = (0..16u8).flat_map(|i| vec![i + 1; 60_000]).collect();
    assert_eq!(fs.read(keep, 0, want.len()).unwrap(), want);
    assert!(fs.check(true).unwrap().problems.is_empty());
    d.power_cut();
    drop(fs);
    d.power_on();
    let mut fs = Fs::open(zoned(&d), opts).unwrap();
    assert_eq!(fs.read(keep, 0, want.len()).unwrap(), want);
    assert!(fs.check(true).unwrap().problems.is_empty());
}

#[test]
fn a_corrupt_data_block_gives_eio_naming_zone_and_offset() {
    let d = disk(16, 2);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let f = fs.create(ROOT, b"a", 0o644, 0, 0).unwrap().ino;
    fs.write(f, 0, &vec![5u8; 50_000], false).unwrap();
    fs.fsync(f).unwrap();
    let z = fs.zone_stats().into_iter().find(|z| z.live > 0).unwrap();
    let start = zone_start(&d, z.zone);
    inject(&d, start + 2, 1);
    fs.close().unwrap();
    let mut fs = Fs::open(zoned(&d), small_opts()).unwrap();
    assert!(fs.read(f, 0, 4096).is_ok());
    let e = fs.read(f, 8192, 10).unwrap_err();
    assert_eq!(e.errno(), libc::EIO);
    // Corrupt a sector's contents instead of making it unreadable.
    damage(&d, start + 4, |raw| raw[7] ^= 1);
    match fs.read(f, 4 * 4096, 10) {
        Err(FsError::Corrupt(s)) => assert!(
            s.contains(&format!("zone {}", z.zone)) && s.contains("offset 16384"),
            "{s}"
        ),
        other => panic!("{other:?}"),
    }
    let r = fs.check(true).unwrap();
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
}

#[test]
fn a_long_overwrite_workload_on_a_small_disk_never_fills_it() {
    let d = disk(10, 1); // 8 sequential zones of 1 MiB, one kept in reserve for cleaning
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let a = fs.create(ROOT, b"a", 0o644, 0, 0).unwrap().ino;
    let b = fs.create(ROOT, b"b", 0o644, 0, 0).unwrap().ino;
    let mut want_a = vec![0u8; 1_500_000];
    let want_b = vec![7u8; 1_000_000];
    fs.write(b, 0, &want_b, false).unwrap();
    fs.fsync(b).unwrap();
    let mut written = 0u64;
    let mut rng = 1u64;
    // ~60 times the disk's capacity in overwrites of random ranges.
    for i in 0..2000u64 {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let off = (rng >> 33) % 1_400_000;
        let len = 20_000 + (rng >> 13) % 200_000;
        let len = len.min(want_a.len() as u64 - off) as usize;
        let byte = (i % 251) as u8 + 1;
        if let Err(e) = fs.write(a, off, &vec![byte; len], false) {
            for z in fs.zone_stats() {
                eprintln!("{z:?}");
            }
            eprintln!("{:?}", fs.clean_candidates());
            panic!("write {i}: {e}");
        }
        want_a[off as usize..off as usize + len].fill(byte);
        written += len as u64;
        if i % 7 == 0 {
            fs.fsync(a).unwrap();
        }
    }
    fs.fsync(a).unwrap();
    assert!(written > 200 << 20, "{written}");
    assert!(fs.meta_stats().cleanings > 20, "{:?}", fs.meta_stats());
    assert_eq!(fs.read(a, 0, want_a.len()).unwrap(), want_a);
    assert_eq!(fs.read(b, 0, want_b.len()).unwrap(), want_b);
    let s = fs.statfs();
    assert!(s.free_blocks * s.block_size > 2 << 20, "{s:?}");
    fs.close().unwrap();
    let mut fs = Fs::open(zoned(&d), small_opts()).unwrap();
    assert_eq!(fs.read(a, 0, want_a.len()).unwrap(), want_a);
    assert_eq!(fs.read(b, 0, want_b.len()).unwrap(), want_b);
    assert!(fs.check(true).unwrap().problems.is_empty());
}

#[test]
fn a_corrupt_extent_metadata_block_gives_eio_naming_zone_and_lba_and_the_mount_survives() {
    let d = disk(16, 2);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let f = fs.create(ROOT, b"a", 0o644, 0, 0).unwrap().ino;
    let g = fs.create(ROOT, b"b", 0o644, 0, 0).unwrap().ino;
    fs.write(f, 0, &vec![5u8; 50_000], false).unwrap();
    fs.fsync(f).unwrap();
    fs.write(g, 0, &vec![6u8; 30_000], false).unwrap();
    fs.fsync(g).unwrap();
    let z = fs.zone_stats().into_iter().find(|z| z.live > 0).unwrap();
    fs.close().unwrap();
    // The first extent is 50,000 bytes = 13 sectors; its metadata block follows.
    let start = zone_start(&d, z.zone);
    let meta = start + 13;
    damage(&d, meta, |raw| {
        assert_eq!(&raw[..8], b"ZEAMETA1");
        raw[40] ^= 0x10;
    });
    let mut fs = Fs::open(zoned(&d), small_opts()).unwrap();
    match fs.read(f, 0, 10) {
        Err(e @ FsError::Corrupt(_)) => {
            assert_eq!(e.errno(), libc::EIO);
            let s = e.to_string();
            assert!(
                s.contains(&format!("zone {}", z.zone)) && s.contains(&format!("{meta}")),
                "{s}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Everything else still works.
    assert_eq!(fs.read(g, 0, 30_000).unwrap(), vec![6u8; 30_000]);
    let h = fs.create(ROOT, b"c", 0o644, 0, 0).unwrap().ino;
    fs.write(h, 0, b"still writable", false).unwrap();
    fs.fsync(h).unwrap();
    let r = fs.check(true).unwrap();
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
}

#[test]
fn corrupt_checkpoints_fail_the_mount_with_an_error_not_a_panic() {
    let d = disk(8, 1);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let f = fs.create(ROOT, b"a", 0o644, 0, 0).unwrap().ino;
    fs.write(f, 0, b"x", false).unwrap();
    fs.close().unwrap();
    // Both checkpoint slots: flip a payload byte in each.
    for slot in [2u64, 2 + (2 * 256 - 2) / 4] {
        damage(&d, slot, |raw| raw[60] ^= 1);
    }
    match Fs::open(zoned(&d), small_opts()) {
        Err(e) => {
            assert_eq!(e.errno(), libc::EIO, "{e}");
            assert!(e.to_string().contains("checkpoint"), "{e}");
        }
        Ok(_) => panic!("mounted with both checkpoints corrupt"),
    }
}

/// A flipped byte in one superblock copy: the mount uses the other copy, and check names the
/// bad copy and why (it used to say "no inconsistencies"); a read-only mount reports it but
/// refuses to repair; repair rewrites the copy from the good one and check is clean again.
#[test]
fn a_damaged_superblock_copy_is_reported_by_check_and_rewritten_by_repair() {
    for (copy, lba, other) in [('A', 0u64, 1u64), ('B', 1, 0)] {
        let d = disk(8, 1);
        let ss = tegula_device::BlockDevice::info(&*d).sector_size as usize;
        let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
        let f = fs.create(ROOT, b"a", 0o644, 0, 0).unwrap().ino;
        fs.write(f, 0, b"x", false).unwrap();
        fs.close().unwrap();
        let read = |lba: u64| {
            let mut raw = vec![0u8; ss];
            tegula_device::BlockDevice::read(&*seen(&d), lba, &mut raw).unwrap();
            raw
        };
        let good = read(other);
        // In the LBA of checkpoint slot 0, covered by the checksum.
        damage(&d, lba, |raw| raw[33] ^= 1);
        let raw = read(lba);

        let ro = FsOptions {
            read_only: true,
            ..small_opts()
        };
        let mut fs = Fs::open(zoned(&d), ro).unwrap();
        let r = fs.check(false).unwrap();
        assert_eq!(r.problems.len(), 1, "copy {copy}: {:?}", r.problems);
        let p = &r.problems[0];
        assert!(
            p.contains(&format!("superblock copy {copy} (LBA {lba})")) && p.contains("checksum"),
            "{p}"
        );
        assert!(fs.repair_superblocks().is_err(), "a read-only mount wrote");
        assert_eq!(read(lba), raw);
        drop(fs);

        let mut fs = Fs::open(zoned(&d), small_opts()).unwrap();
        let fixed = fs.repair_superblocks().unwrap();
        assert_eq!(fixed.len(), 1, "{fixed:?}");
        assert!(fixed[0].contains(&format!("copy {copy}")), "{fixed:?}");
        let r = fs.check(true).unwrap();
        assert!(r.problems.is_empty(), "copy {copy}: {:?}", r.problems);
        assert_eq!(read(lba), good, "copy {copy} rewritten from the good one");
        assert!(fs.repair_superblocks().unwrap().is_empty());
        fs.close().unwrap();

        let mut fs = Fs::open(zoned(&d), small_opts()).unwrap();
        assert!(fs.check(true).unwrap().problems.is_empty());
        assert_eq!(fs.read(f, 0, 1).unwrap(), b"x");
        fs.close().unwrap();
    }
}

/// A file appended in small records (RocksDB's log) and read back page by page, as the kernel
/// does when its page cache holds partial pages: the bytes are right, the reads come mostly
/// from the read cache and its read-ahead (a handful of device reads, not one per page, and
/// none re-reading a sector), and a bad sector inside a read-ahead fails only a read that
/// asks for it.
#[test]
fn page_by_page_reads_use_the_read_cache_and_read_ahead_never_fails_a_good_read() {
    let d = disk(16, 2);
    let mut fs = Fs::mkfs(zoned(&d), tegula_fs::FsOptions::default()).unwrap();
    let f = fs.create(ROOT, b"000004.log", 0o644, 0, 0).unwrap().ino;
    let mut want = Vec::new();
    for i in 0..5000u32 {
        let rec: Vec<u8> = (0..416u32).map(|j| (i * 7 + j) as u8).collect();
        fs.write(f, want.len() as u64, &rec, false).unwrap();
        want.extend_from_slice(&rec);
        if i % 1000 == 999 {
            fs.fsync(f).unwrap(); // extents ending at odd offsets
        }
    }
    fs.fsync(f).unwrap();
    let reads_before = d.stats().reads;
    let rotation_before = d.stats().mech.rotation_ns;
    let mut got = Vec::new();
    for off in (0..want.len()).step_by(4096) {
        got.extend(fs.read(f, off as u64, 4096).unwrap());
    }
    assert!(got == want, "page-by-page read differs");
    let reads = d.stats().reads - reads_before;
    let pages = want.len().div_ceil(4096) as u64;
    assert!(reads * 10 < pages, "{reads} device reads for {pages} pages");
    // Moving forward only: no read waits most of a revolution for a sector just read.
    let rotation_ms = (d.stats().mech.rotation_ns - rotation_before) as f64 / 1e6;
    assert!(
        rotation_ms < 8.3 * reads as f64,
        "{rotation_ms} ms of rotation"
    );
    // Random order, then the whole file at once, after a remount (empty caches).
    fs.close().unwrap();
    let fs = Fs::open(zoned(&d), tegula_fs::FsOptions::default()).unwrap();
    for k in [97u64, 3, 250, 0, 480, 17, 18, 19, 400] {
        let off = k * 4096 + 123;
        let n = 5000usize.min(want.len() - off as usize);
        let g = fs.read(f, off, n).unwrap();
        assert!(
            g[..] == want[off as usize..off as usize + n],
            "read at {off}"
        );
    }
    assert!(fs.read(f, 0, want.len()).unwrap() == want);
    // A bad sector 64 KiB into the file: reads before it, including ones whose read-ahead
    // would cover it, succeed; the read of the bad bytes is EIO.
    let z = fs.zone_stats().into_iter().find(|z| z.live > 0).unwrap();
    let start = zone_start(&d, z.zone);
    fs.close().unwrap();
    inject(&d, start + 16, 1);
    let fs = Fs::open(zoned(&d), tegula_fs::FsOptions::default()).unwrap();
    for off in (0..16 * 4096u64).step_by(4096) {
        assert!(
            fs.read(f, off, 4096).unwrap()[..] == want[off as usize..off as usize + 4096],
            "read at {off}"
        );
    }
    assert_eq!(fs.read(f, 16 * 4096, 10).unwrap_err().errno(), libc::EIO);
}

/// TeraSort's output committer renames a directory over an empty one while the kernel still
/// holds the replaced one: the replaced directory is an orphan (no name, nlink 0), which a
/// read-only check counts as such, the clean unmount frees, and no check takes for a wrong
/// link count.
#[test]
fn a_directory_replaced_while_the_kernel_holds_it_is_an_orphan_not_a_bad_link_count() {
    let ro = FsOptions {
        read_only: true,
        ..small_opts()
    };
    let held_orphan = |d: &std::sync::Arc<tegula_device::Disk>| {
        let mut fs = Fs::mkfs(zoned(d), small_opts()).unwrap();
        let a = fs.mkdir(ROOT, b"a", 0o755, 0, 0).unwrap().ino;
        let b = fs.mkdir(ROOT, b"b", 0o755, 0, 0).unwrap().ino;
        fs.remember(a);
        fs.remember(b);
        fs.rename(ROOT, b"a", ROOT, b"b", false).unwrap();
        assert!(
            fs.getattr(b).is_ok(),
            "the kernel still holds the replaced directory"
        );
        assert!(fs.check(true).unwrap().problems.is_empty());
        fs.fsync_dir(ROOT).unwrap();
        (fs, b)
    };

    // A mount that stops without the kernel's forget: a read-only check sees one orphan, and
    // the next read-write mount frees it.
    let d = disk(16, 2);
    let (fs, b) = held_orphan(&d);
    d.power_cut();
    drop(fs);
    d.power_on();
    let mut fs = Fs::open(zoned(&d), ro.clone()).unwrap();
    let r = fs.check(true).unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(r.orphans, 1);
    drop(fs);
    let mut fs = Fs::open(zoned(&d), small_opts()).unwrap();
    assert!(fs.getattr(b).is_err());
    let r = fs.check(true).unwrap();
    assert!(r.problems.is_empty() && r.orphans == 0, "{r:?}");

    // A clean unmount frees it at once.
    let d = disk(16, 2);
    let (fs, b) = held_orphan(&d);
    fs.close().unwrap();
    let mut fs = Fs::open(zoned(&d), ro).unwrap();
    assert!(fs.getattr(b).is_err());
    let r = fs.check(true).unwrap();
    assert!(r.problems.is_empty() && r.orphans == 0, "{r:?}");
}

/// `tar` sets a file's modification time while the file is open, before its data reaches the
/// drive (FUSE's writeback cache sends the data at close): the time set outlives the data's
/// flush and a remount (the flush used to stamp the flush time over it). A write after the
/// setattr moves the time again.
#[test]
fn a_modification_time_set_before_the_data_is_flushed_is_kept() {
    let d = disk(16, 2);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let f = fs.create(ROOT, b"f", 0o644, 0, 0).unwrap().ino;
    let g = fs.create(ROOT, b"g", 0o644, 0, 0).unwrap().ino;
    let set = 1_000_000_000_i64 * 1_600_000_000;
    for ino in [f, g] {
        // Less than a buffer: the data stays in memory until the fsync.
        fs.write(ino, 0, &vec![7u8; 40_000], false).unwrap();
        let a = tegula_fs::SetAttr {
            mtime: Some(set),
            ..Default::default()
        };
        fs.setattr(ino, &a).unwrap();
    }
    // g is written again after its time was set.
    fs.write(g, 40_000, b"more", false).unwrap();
    for ino in [f, g] {
        fs.fsync(ino).unwrap();
        fs.release(ino).unwrap();
    }
    assert_eq!(fs.getattr(f).unwrap().mtime, set);
    fs.close().unwrap();
    let fs = Fs::open(zoned(&d), small_opts()).unwrap();
    assert_eq!(fs.getattr(f).unwrap().mtime, set);
    assert!(
        fs.getattr(g).unwrap().mtime > set,
        "a later write moves the time"
    );
    assert_eq!(fs.read(f, 0, 40_001).unwrap(), vec![7u8; 40_000]);
}
