//! Disk images: round trips of zone table, data, statistics and clock; read-only handles;
//! metadata-only images; and corrupt files, which must give a clear `DeviceError::Image`
//! naming the path and the problem, never a panic.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use tegula_device::image::{decode_header, decode_state, encode_state, HEADER_REGION};
use tegula_device::{
    profile, BlockDevice, DeviceError, Disk, OpenOptions, ZoneCondition, ZoneFilter, ZonedDevice,
};

const ZS: u64 = 256;

fn open(p: &Path) -> Result<Disk, DeviceError> {
    Disk::open_image(p, OpenOptions::default())
}

/// Opens `p` expecting an image error that names the path and contains `what`.
#[track_caller]
fn expect_image_error(p: &Path, what: &str) {
    let r = std::panic::catch_unwind(|| open(p));
    let r = r.unwrap_or_else(|_| panic!("opening {} panicked", p.display()));
    let e = expect_err(r, "Image");
    let msg = e.to_string();
    assert!(msg.contains(&p.display().to_string()), "{msg}");
    assert!(msg.contains(what), "expected {what:?} in {msg}");
}

/// A small image with data in several zones, closed. Returns its zones and data.
fn populated(p: &Path) -> (Vec<tegula_device::Zone>, Vec<u8>) {
    let d = Disk::create_image(p, tiny_hm_config(16, 8)).unwrap();
    d.write(3, &pattern(3, 5, 1)).unwrap();
    for z in [1u32, 4, 9] {
        let s = z as u64 * ZS;
        d.write(s, &pattern(s, 7, z)).unwrap();
    }
    d.finish_zone(4).unwrap();
    d.close_zone(9).unwrap();
    let zones = d.report_zones(ZoneFilter::All);
    let mut data = vec![0u8; 16 * SS];
    d.read(4 * ZS, &mut data).unwrap();
    d.close().unwrap();
    (zones, data)
}

#[test]
fn image_round_trip_keeps_zones_data_stats_and_clock() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.img");
    let (zones, data) = populated(&p);
    let d = open(&p).unwrap();
    assert_eq!(d.report_zones(ZoneFilter::All), zones);
    let mut back = vec![0u8; 16 * SS];
    d.read(4 * ZS, &mut back).unwrap();
    assert_eq!(back, data);
    let mut conv = vec![0u8; 5 * SS];
    d.read(3, &mut conv).unwrap();
    assert_eq!(conv, pattern(3, 5, 1));
    let (stats, now) = (d.stats(), d.now());
    assert_eq!(stats.writes, 4);
    assert_eq!(stats.bytes_written, (5 + 3 * 7) * SS as u64);
    assert_eq!(stats.zone_bytes_written[4], 7 * SS as u64);
    assert!(stats.reads >= 2 && now > 0);
    d.close().unwrap();
    // A second reopen sees the clock and statistics the first one left.
    let d = open(&p).unwrap();
    let s2 = d.stats();
    assert_eq!(s2.reads, stats.reads);
    assert_eq!(s2.writes, stats.writes);
    assert_eq!(s2.zone_bytes_written, stats.zone_bytes_written);
    assert!(d.now() >= now && d.now() <= now + tegula_device::MS);
}

#[test]
fn state_persists_after_every_flush_without_a_clean_close() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.img");
    let d = Disk::create_image(&p, tiny_hm_config(16, 8)).unwrap();
    d.write(2 * ZS, &pattern(2 * ZS, 3, 7)).unwrap();
    d.flush().unwrap();
    // Simulate a crash of the host process: the handle is leaked, never dropped or closed, and
    // its descriptors are closed as the kernel closes a dead process's (releasing its lock).
    std::mem::forget(d);
    close_descriptors_of(&p);
    let d = open(&p).unwrap();
    assert_eq!(d.zone(2).unwrap().write_pointer_lba, 2 * ZS + 3);
    let mut b = vec![0u8; 3 * SS];
    d.read(2 * ZS, &mut b).unwrap();
    assert_eq!(b, pattern(2 * ZS, 3, 7));
}

#[test]
fn read_only_handles_refuse_writes_and_leave_the_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.img");
    populated(&p);
    let before = std::fs::read(&p).unwrap();
    let d = Disk::open_image(
        &p,
        OpenOptions {
            read_only: true,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    expect_err(d.write(0, &[0u8; SS]), "ReadOnlyHandle");
    expect_err(d.append(2, &[0u8; SS]), "ReadOnlyHandle");
    expect_err(d.reset_zone(1), "ReadOnlyHandle");
    expect_err(d.discard(0, 1), "ReadOnlyHandle");
    let mut b = vec![0u8; 7 * SS];
    d.read(ZS, &mut b).unwrap();
    assert_eq!(b, pattern(ZS, 7, 1));
    d.flush().unwrap();
    d.close().unwrap();
    assert!(
        std::fs::read(&p).unwrap() == before,
        "a read-only open changed the image"
    );
}

#[test]
fn metadata_only_images_of_a_full_size_drive_are_tiny() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.img");
    let mut c = profile("hm-smr").unwrap();
    c.store_data = false;
    let cap = c.capacity;
    assert!(cap > 10_000_000_000_000);
    let d = Disk::create_image(&p, c).unwrap();
    let z = d.info().conventional_zones + 100;
    let s = d.zone(z).unwrap().start_lba;
    d.write(s, &vec![1u8; 1 << 20]).unwrap();
    d.close().unwrap();
    let md = std::fs::metadata(&p).unwrap();
    assert!(md.len() < 16 << 20, "apparent size {}", md.len());
    assert!(
        md.blocks() * 512 < 16 << 20,
        "allocated {}",
        md.blocks() * 512
    );
    let d = open(&p).unwrap();
    assert_eq!(d.info().capacity_sectors * 4096, cap);
    assert_eq!(d.zone(z).unwrap().write_pointer_lba, s + 256);
    assert!(!d.info().stores_data);
}

#[test]
fn create_refuses_to_overwrite_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.img");
    std::fs::write(&p, b"precious").unwrap();
    let e = Disk::create_image(&p, tiny_hm_config(16, 8)).unwrap_err();
    assert!(e.to_string().contains(&p.display().to_string()), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), b"precious");
    populated(&dir.path().join("e.img"));
    assert!(Disk::create_image(&dir.path().join("e.img"), tiny_hm_config(16, 8)).is_err());
    open(&dir.path().join("e.img")).unwrap();
}

#[test]
fn missing_image_is_an_io_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("nope.img");
    let e = expect_err(open(&p), "Io");
    assert!(e.to_string().contains("nope.img"), "{e}");
}

#[test]
fn truncated_images_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.img");
    populated(&p);
    let full = std::fs::metadata(&p).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(full - 4096).unwrap();
    expect_image_error(&p, "truncated");
    f.set_len(HEADER_REGION + 10).unwrap();
    expect_image_error(&p, "truncated");
    f.set_len(30).unwrap();
    expect_image_error(&p, "truncated");
    f.set_len(0).unwrap();
    expect_image_error(&p, "truncated");
}

#[test]
fn foreign_files_are_refused_as_not_an_image() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("foreign");
    let mut x = 0x9e3779b97f4a7c15u64;
    let random: Vec<u8> = (0..200_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&p, &random).unwrap();
    expect_image_error(&p, "not a tegula disk image");
    std::fs::write(
        &p,
        "profile = \"hm-smr\"\ncapacity = \"4GiB\"\n".repeat(100),
    )
    .unwrap();
    expect_image_error(&p, "not a tegula disk image");
}

#[test]
fn a_flipped_header_byte_is_a_checksum_or_format_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.img");
    populated(&p);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&p)
        .unwrap();
    for off in [0u64, 9, 14, 30, 60, 200] {
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, off).unwrap();
        f.write_all_at(&[b[0] ^ 0x10], off).unwrap();
        let r = std::panic::catch_unwind(|| open(&p)).expect("no panic");
        let e = expect_err(r, "Image");
        assert!(e.to_string().contains("d.img"), "{e}");
        f.write_all_at(&b, off).unwrap();
    }
    open(&p).unwrap();
    // The checksum is what catches a flip in the configuration text.
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, 100).unwrap();
    f.write_all_at(&[b[0] ^ 1], 100).unwrap();
    expect_image_error(&p, "checksum");
}

/// (offset, seq, now) of both state slots.
fn slots(p: &Path) -> Vec<(u64, u64, u64)> {
    let bytes = std::fs::read(p).unwrap();
    let h = decode_header(&bytes[..HEADER_REGION as usize]).unwrap();
    (0..2)
        .map(|i| {
            let off = h.state_offset + i * h.slot_size;
            let s = decode_state(&bytes[off as usize..(off + h.slot_size) as usize]).unwrap();
            (off, s.seq, s.now)
        })
        .collect()
}

fn smash(p: &Path, off: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
    f.write_all_at(&[0xee; 64], off + 20).unwrap();
}

#[test]
fn a_corrupt_newest_state_slot_falls_back_to_the_older_one() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.img");
    populated(&p);
    let s = slots(&p);
    let (newest, older) = if s[0].1 > s[1].1 {
        (s[0], s[1])
    } else {
        (s[1], s[0])
    };
    assert_eq!(newest.1, older.1 + 1);
    smash(&p, newest.0);
    let d = open(&p).unwrap();
    assert_eq!(d.now(), older.2, "the older slot's clock is restored");
    drop(d);
    // The next state write goes to the broken slot, and both are valid again.
    let s = slots(&p);
    assert!(s.iter().all(|x| x.1 > 0));
}

#[test]
fn both_state_slots_corrupt_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.img");
    populated(&p);
    for (off, _, _) in slots(&p) {
        smash(&p, off);
    }
    expect_image_error(&p, "no valid state");
    expect_image_error(&p, "slot A");
    expect_image_error(&p, "slot B");
}

#[test]
fn a_checksummed_state_that_contradicts_the_zones_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.img");
    populated(&p);
    let bytes = std::fs::read(&p).unwrap();
    let h = decode_header(&bytes[..HEADER_REGION as usize]).unwrap();
    let s = slots(&p);
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    let forge = |edit: &dyn Fn(&mut tegula_device::image::ImageState)| {
        for (i, &(off, _, _)) in s.iter().enumerate() {
            let raw = &bytes[off as usize..(off + h.slot_size) as usize];
            let mut st = decode_state(raw).unwrap();
            edit(&mut st);
            st.seq += 10 + i as u64;
            let mut enc = encode_state(&st);
            enc.resize(h.slot_size as usize, 0);
            f.write_all_at(&enc, off).unwrap();
        }
    };
    forge(&|st| st.zones[3].2 = 10 * ZS);
    expect_image_error(&p, "outside the zone");
    forge(&|st| st.zones[3] = (ZoneCondition::NotWritePointer, false, 4 * ZS));
    expect_image_error(&p, "does not fit its type");
    forge(&|st| {
        st.zones.pop();
    });
    expect_image_error(&p, "zones");
}

/// Closes every descriptor of this process open on `path`, as process death would.
fn close_descriptors_of(path: &std::path::Path) {
    let want = std::fs::canonicalize(path).unwrap();
    for e in std::fs::read_dir("/proc/self/fd").unwrap() {
        let e = e.unwrap();
        if std::fs::read_link(e.path()).ok().as_deref() == Some(want.as_path()) {
            let fd: i32 = e.file_name().to_str().unwrap().parse().unwrap();
            // SAFETY: closing a descriptor of a handle that was leaked on purpose and is never
            // used again.
            unsafe { libc::close(fd) };
        }
    }
}

/// The state slots of `p`: (offset, sequence or `None` when it does not decode), A then B.
fn slots_of(p: &Path) -> Vec<(u64, Option<u64>)> {
    let bytes = std::fs::read(p).unwrap();
    let h = decode_header(&bytes[..HEADER_REGION as usize]).unwrap();
    (0..2)
        .map(|i| {
            let off = h.state_offset + i * h.slot_size;
            let b = &bytes[off as usize..(off + h.slot_size) as usize];
            (off, decode_state(b).ok().map(|s| s.seq))
        })
        .collect()
}

/// A two-slot state (like a superblock pair) falls back to the older slot when the newer one
/// is damaged — a save torn by a crash, or corruption — and says so instead of passing over
/// it silently: on open (`Disk::open_warnings`) and in a check (`Disk::check_image`).
#[test]
fn a_damaged_newest_state_slot_is_reported_not_silently_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.img");
    populated(&p);
    assert!(open(&p).unwrap().open_warnings().is_empty());
    assert!(Disk::check_image(&p).unwrap().is_empty());
    let slots = slots_of(&p);
    let newest = if slots[0].1 > slots[1].1 {
        slots[0]
    } else {
        slots[1]
    };
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.write_all_at(&[0x5a], newest.0 + 40).unwrap();
    let d = open(&p).unwrap();
    let w = d.open_warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("newer sequence") && w[0].contains("lost"),
        "{w:?}"
    );
    d.close().unwrap();
    // The close rewrote the damaged slot (the older one now): no warning left.
    assert!(Disk::check_image(&p).unwrap().is_empty());
    // A damaged older slot is a milder warning.
    let slots = slots_of(&p);
    let older_now = if slots[0].1 < slots[1].1 {
        slots[0]
    } else {
        slots[1]
    };
    f.write_all_at(&[0x5a], older_now.0 + 40).unwrap();
    let w = Disk::check_image(&p).unwrap();
    assert!(w.len() == 1 && w[0].contains("older"), "{w:?}");
}

#[test]
fn reads_through_a_mapping_see_the_image_and_every_later_write() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.img");
    let (zones, data) = populated(&p);
    let opts = OpenOptions {
        mmap_reads: true,
        ..OpenOptions::default()
    };
    let d = Disk::open_image(&p, opts).unwrap();
    assert_eq!(d.report_zones(ZoneFilter::All), zones);
    let mut back = vec![0u8; 16 * SS];
    d.read(4 * ZS, &mut back).unwrap();
    assert_eq!(back, data, "data written before the open");
    // Writes after the open (through the drive's write cache, then the file) read back.
    let s = 2 * ZS;
    let fresh = pattern(s, 9, 2);
    d.write(s, &fresh).unwrap();
    d.flush().unwrap();
    let mut got = vec![0u8; fresh.len()];
    d.read(s, &mut got).unwrap();
    assert_eq!(got, fresh, "data written after the open");
    // A reset zone, written again, then reopened.
    d.reset_zone(2).unwrap();
    d.write(s, &pattern(s, 1, 7)).unwrap();
    d.close().unwrap();
    let d = Disk::open_image(&p, opts).unwrap();
    let mut first = vec![0u8; SS];
    d.read(s, &mut first).unwrap();
    assert_eq!(first, pattern(s, 1, 7), "data written before a reopen");
}
