//! A damaged log record is corruption, never a torn tail. Bits are flipped in log chunks on
//! the media (behind the zone rules) and the database reopened: `Db::open` reports
//! `Corruption` naming the zone and byte offset of the chunk and writes nothing, and
//! `Db::check` finds damage in the log of an open database. Only a chunk a power cut really
//! tore (its last sectors beyond the write pointer) ends the log quietly. Log chunks of the
//! version 1 format (older images) are still replayed.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use std::sync::Arc;
use tegula_codec::checksum::masked_crc32c as crc;
use tegula_device::{BlockDevice, Disk, Zone, ZoneFilter, ZonedDevice};
use tegula_smrdb::log::chunk::frame_continued;
use tegula_smrdb::log::chunk::{read_head, Head};
use tegula_smrdb::log::{encode_batch, frame_v1};
use tegula_smrdb::manifest::Manifest;
use tegula_smrdb::superblock::Superblock;
use tegula_smrdb::{Db, Error, Mode, Options, WriteBatch, WriteOptions};

const SS: usize = 4096;

const SYNCED: WriteOptions = WriteOptions {
    sync: true,
    disable_wal: false,
};

fn put(db: &Db, k: &[u8], v: &[u8], wo: WriteOptions) {
    let mut b = WriteBatch::new();
    b.put(k, v);
    db.write(b, wo).unwrap();
}

fn sector(dev: &dyn ZonedDevice, lba: u64) -> Vec<u8> {
    let mut s = vec![0u8; SS];
    dev.read(lba, &mut s).unwrap();
    s
}

/// Sequential zones whose first sector starts a log chunk (of either version).
fn log_zones(dev: &dyn ZonedDevice) -> Vec<Zone> {
    let conv = dev.info().conventional_zones;
    dev.report_zones(ZoneFilter::All)
        .into_iter()
        .filter(|z| z.index >= conv && z.write_pointer_lba > z.start_lba)
        .filter(|z| matches!(read_head(&sector(dev, z.start_lba)), Head::Chunk { .. }))
        .collect()
}

/// The first sector (LBA) of every chunk of log band `z` below its write pointer.
fn chunks(dev: &dyn ZonedDevice, z: &Zone) -> Vec<u64> {
    let mut out = Vec::new();
    let mut lba = z.start_lba;
    while lba < z.start_lba + z.written_sectors() {
        let n = read_head(&sector(dev, lba)).sectors(SS as u64);
        assert!(n > 0, "no chunk at LBA {lba}");
        out.push(lba);
        lba += n;
    }
    out
}

/// Where `needle` first occurs in a log band: the zone, the LBA of the chunk holding it, and
/// the LBA and byte of the needle.
fn find_in_log(dev: &dyn ZonedDevice, needle: &[u8]) -> (Zone, u64, u64, usize) {
    for z in log_zones(dev) {
        for c in chunks(dev, &z) {
            let n = read_head(&sector(dev, c)).sectors(SS as u64);
            for lba in c..c + n {
                let s = sector(dev, lba);
                if let Some(at) = s.windows(needle.len()).position(|w| w == needle) {
                    return (z, c, lba, at);
                }
            }
        }
    }
    panic!("{:?} is in no log band", String::from_utf8_lossy(needle));
}

/// The LBA of the raw disk holding sector `lba` of a sequential zone as SMRDB sees the disk
/// (on ZNS, zones come after the emulated conventional zone's log).
fn raw(disk: &Arc<Disk>, lba: u64) -> u64 {
    lba + u64::from(zone_shift(disk)) * disk.info().zone_sectors
}

/// Flips bits of byte `at` of sector `lba` (of a sequential zone, as SMRDB sees the disk) on
/// the media, leaving its neighbours intact.
fn flip(disk: &Arc<Disk>, lba: u64, at: usize, mask: u8) {
    let lba = raw(disk, lba);
    let mut s = sector(disk.as_ref(), lba);
    s[at] ^= mask;
    disk.with_media(|m| {
        m.write(lba, &s, true)?;
        // Only this sector is damaged on purpose: undo the shingled overlap of the rewrite.
        m.shingling_mut().clear(lba + 1, 1 << 16);
        Ok::<_, tegula_device::DeviceError>(())
    })
    .unwrap();
}

fn crash(disk: &Disk, db: Db) {
    disk.power_cut();
    drop(db);
    disk.power_on();
}

/// Everything a failed open could have changed: the zones and the bytes written.
fn footprint(disk: &Disk) -> (Vec<(u32, u64, String)>, u64) {
    let zones = disk
        .report_zones(ZoneFilter::All)
        .into_iter()
        .map(|z| (z.index, z.write_pointer_lba, z.condition.to_string()))
        .collect();
    (zones, disk.stats().bytes_written)
}

/// Opens the database expecting corruption in the chunk at `chunk_lba` of zone `z`, and
/// checks that the failed open wrote nothing.
fn expect_corruption(disk: &Arc<Disk>, z: &Zone, chunk_lba: u64) -> String {
    let before = footprint(disk);
    let dev = seen(disk.clone());
    let err = match Db::open(dev, tiny_opts()) {
        Ok(db) => panic!(
            "a damaged log chunk was taken for a torn tail ({} keys recovered)",
            db.scan(b"", None).unwrap().count()
        ),
        Err(e) => e,
    };
    let Error::Corruption {
        zone, offset, what, ..
    } = &err
    else {
        panic!("expected corruption, got {err}");
    };
    assert_eq!(*zone, z.index, "{err}");
    assert_eq!(*offset, (chunk_lba - z.start_lba) * SS as u64, "{err}");
    assert!(what.contains("not a torn write"), "{err}");
    assert_eq!(footprint(disk), before, "a failed open changed the device");
    err.to_string()
}

/// The case: put, delete, put more, one sync (so that every record is in one chunk,
/// the last of the log), then one bit flipped in an early record. Replay used to stop there
/// as at a torn tail: the synced writes vanished, and `db check` said ok.
#[test]
fn flipped_bit_in_an_early_record_of_the_last_chunk_is_corruption() {
    let disk = tiny_disk(32);
    let dev = seen(disk.clone());
    let db = Db::create(dev.clone(), format(Mode::Soc), tiny_opts()).unwrap();
    put(&db, b"first", b"1", WriteOptions::default());
    put(&db, b"doomed", b"x", WriteOptions::default());
    let mut del = WriteBatch::new();
    del.delete(b"doomed");
    db.write(del, WriteOptions::default()).unwrap();
    for i in 0..20u64 {
        put(&db, &key(i), b"later", WriteOptions::default());
    }
    put(&db, b"synced", b"s", SYNCED);
    crash(&disk, db);
    let dev = seen(disk.clone());
    let (z, chunk, lba, at) = find_in_log(dev.as_ref(), b"first");
    assert_eq!(
        chunks(dev.as_ref(), &z),
        vec![chunk],
        "one chunk holds the whole log"
    );
    assert_eq!(find_in_log(dev.as_ref(), b"synced").1, chunk);
    flip(&disk, lba, at, 0x01);
    let e = expect_corruption(&disk, &z, chunk);
    assert!(e.contains("checksum"), "{e}");
}

/// A damaged chunk with valid chunks behind it in the same band (commit b220b21's case).
#[test]
fn flipped_bit_in_log_record_followed_by_valid_records_is_corruption_not_a_torn_tail() {
    let disk = tiny_disk(32);
    let dev = seen(disk.clone());
    let db = Db::create(dev.clone(), format(Mode::Soc), tiny_opts()).unwrap();
    put(&db, b"first", b"1", SYNCED);
    put(&db, b"doomed", b"x", SYNCED);
    let mut del = WriteBatch::new();
    del.delete(b"doomed");
    db.write(del, SYNCED).unwrap();
    for i in 0..20u64 {
        put(&db, &key(i), b"later", SYNCED);
    }
    crash(&disk, db);
    let dev = seen(disk.clone());
    let (z, chunk, lba, at) = find_in_log(dev.as_ref(), b"first");
    assert!(chunks(dev.as_ref(), &z).len() > 20);
    flip(&disk, lba, at, 0x01);
    expect_corruption(&disk, &z, chunk);
}

fn three_synced_puts() -> (Arc<Disk>, Arc<dyn ZonedDevice>) {
    let disk = tiny_disk(32);
    let dev = seen(disk.clone());
    let db = Db::create(dev.clone(), format(Mode::Soc), tiny_opts()).unwrap();
    put(&db, b"a", b"1", SYNCED);
    put(&db, b"b", b"2", SYNCED);
    // A value of three sectors: its chunk spans four.
    put(&db, b"last", &[b'L'; 3 * SS], SYNCED);
    crash(&disk, db);
    let dev = seen(disk.clone());
    (disk, dev)
}

/// A flipped bit in the length field of the last chunk: with a version 1 header it could
/// claim to run past the write pointer and pass for a torn tail; the header's own checksum
/// tells them apart.
#[test]
fn flipped_bit_in_the_length_of_the_last_chunk_is_corruption() {
    let (disk, dev) = three_synced_puts();
    let (z, chunk, _, _) = find_in_log(dev.as_ref(), b"last");
    assert_eq!(chunks(dev.as_ref(), &z).last(), Some(&chunk));
    // Byte 6 of the length: the chunk would claim a megabyte more.
    flip(&disk, chunk, 6, 0x10);
    let e = expect_corruption(&disk, &z, chunk);
    assert!(e.contains("header"), "{e}");
}

/// A flipped bit in the magic of the last chunk, below the write pointer: no chunk starts where
/// one must.
#[test]
fn damaged_magic_of_the_last_chunk_is_corruption() {
    let (disk, dev) = three_synced_puts();
    let (z, chunk, _, _) = find_in_log(dev.as_ref(), b"last");
    flip(&disk, chunk, 0, 0x02);
    let e = expect_corruption(&disk, &z, chunk);
    assert!(e.contains("magic"), "{e}");
}

/// A database whose log spans two bands at a power cut (1,500 puts of 1,000 bytes in one
/// 8 MiB memtable on 1 MiB zones, the last put synced): the disk and the first log band.
fn log_in_two_bands() -> (Arc<Disk>, Zone) {
    let disk = tiny_disk(32);
    let dev = seen(disk.clone());
    let o = Options {
        memtable_bytes: Some(8 << 20),
        ..tiny_opts()
    };
    let db = Db::create(dev.clone(), format(Mode::Soc), o).unwrap();
    for i in 0..1500u32 {
        put(
            &db,
            format!("k{i:04}").as_bytes(),
            &[b'v'; 1000],
            WriteOptions::default(),
        );
    }
    put(&db, b"synced", b"s", SYNCED);
    crash(&disk, db);
    let dev = seen(disk.clone());
    let (first, _, _, _) = find_in_log(dev.as_ref(), b"k0000");
    let (second, _, _, _) = find_in_log(dev.as_ref(), b"synced");
    assert_ne!(first.index, second.index, "the log spans two bands");
    (disk, first)
}

/// The last chunk of an earlier log band damaged, a later log band intact: replay used to take
/// the damage for the first band's torn tail and go on with the second band.
#[test]
fn damaged_last_chunk_of_an_earlier_log_band_is_corruption() {
    let (disk, first) = log_in_two_bands();
    let dev = seen(disk.clone());
    let last = *chunks(dev.as_ref(), &first).last().unwrap();
    flip(&disk, last, 100, 0x01);
    expect_corruption(&disk, &first, last);
}

/// An earlier log band whose last chunk is a continued one ("SLC2") ending inside a record,
/// with a later log band after it: the engine completes a record in its band before it moves
/// on, so this is damage, never a record a crash cut short (that can only be the newest log's
/// end). The open reports corruption at the band's end and writes nothing.
#[test]
fn an_earlier_log_band_ending_inside_a_record_is_corruption() {
    let (disk, first) = log_in_two_bands();
    let dev = seen(disk.clone());
    // The first band's last chunk, rewritten as a continued chunk of the same sectors whose
    // payload stops ten bytes short of its last record's end.
    let last = *chunks(dev.as_ref(), &first).last().unwrap();
    let Head::Chunk {
        len,
        header,
        continued: false,
        ..
    } = read_head(&sector(dev.as_ref(), last))
    else {
        panic!("the band's last chunk is not an ordinary one");
    };
    let sectors = (header + len as usize).div_ceil(SS);
    let old: Vec<u8> = (0..sectors as u64)
        .flat_map(|i| sector(dev.as_ref(), last + i))
        .collect();
    let payload = &old[header..header + len as usize];
    let cut = frame_continued(&payload[..payload.len() - 10], SS as u64);
    assert_eq!(cut.len(), sectors * SS, "the cut chunk keeps the sectors");
    let at = raw(&disk, last);
    disk.with_media(|m| {
        m.write(at, &cut, true)?;
        m.shingling_mut().clear(at + sectors as u64, 1 << 16);
        Ok::<_, tegula_device::DeviceError>(())
    })
    .unwrap();
    let before = footprint(&disk);
    let err = match Db::open(seen(disk.clone()), tiny_opts()) {
        Ok(_) => panic!("a log band ending inside a record was accepted"),
        Err(e) => e,
    };
    let Error::Corruption { zone, what, .. } = &err else {
        panic!("expected corruption, got {err}");
    };
    assert_eq!(*zone, first.index, "{err}");
    assert!(what.contains("ends inside a record"), "{err}");
    assert!(what.contains("later log bands follow"), "{err}");
    assert_eq!(footprint(&disk), before, "a failed open changed the device");
}

/// A chunk a power cut tore (its last sectors never reached the media, so the write pointer
/// stops inside it) is the end of the log: the writes before it are recovered, new writes go
/// to a new log band, and later recoveries and checks accept the torn band before it.
#[test]
fn torn_last_chunk_is_the_end_of_the_log() {
    let (disk, dev) = three_synced_puts();
    let (z, chunk, _, _) = find_in_log(dev.as_ref(), b"last");
    assert_eq!(
        read_head(&sector(dev.as_ref(), chunk)).sectors(SS as u64),
        4
    );
    // What power_on does when the chunk's last sectors were lost with the drive's cache.
    disk.set_write_pointer(z.index + zone_shift(&disk), raw(&disk, chunk) + 2)
        .unwrap();
    let db = Db::open(dev.clone(), tiny_opts()).unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
    assert_eq!(db.get(b"last").unwrap(), None);
    assert!(db.check().unwrap().is_ok());
    put(&db, b"after", b"3", SYNCED);
    assert_eq!(
        dev.zone(z.index).unwrap().write_pointer_lba,
        chunk + 2,
        "nothing appended behind a torn chunk"
    );
    crash(&disk, db);
    let dev = seen(disk.clone());
    let db = Db::open(dev, tiny_opts()).unwrap();
    assert_eq!(db.get(b"after").unwrap(), Some(b"3".to_vec()));
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
    let rep = db.check().unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
    assert!(rep.log_records >= 3, "{rep:?}");
}

/// `Db::check` reads the log bands too: damage to a log record of an open database is a
/// problem naming the zone.
#[test]
fn check_reports_a_damaged_log_record_of_an_open_database() {
    let disk = tiny_disk(32);
    let dev = seen(disk.clone());
    let db = Db::create(dev.clone(), format(Mode::Soc), tiny_opts()).unwrap();
    for i in 0..5u64 {
        put(&db, &key(i), b"v", SYNCED);
    }
    let rep = db.check().unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
    assert_eq!(rep.log_records, 5);
    let (z, _, lba, at) = find_in_log(dev.as_ref(), &key(2));
    flip(&disk, lba, at, 0x01);
    let rep = db.check().unwrap();
    assert!(!rep.is_ok(), "damage in the log went unnoticed");
    assert!(
        rep.problems
            .iter()
            .any(|p| p.contains(&format!("zone {}", z.index))),
        "{:?}",
        rep.problems
    );
}

/// An image written before log chunks had a header checksum: a version 2 manifest listing a
/// log band of version 1 ("SLOG") chunks. It opens and replays; new records go to a new log
/// band, and the manifest written then is version 3, which older engines refuse.
#[test]
fn version_1_log_chunks_of_older_images_are_replayed() {
    let disk = tiny_disk(32);
    let dev = seen(disk.clone());
    Db::create(dev.clone(), format(Mode::Soc), tiny_opts())
        .unwrap()
        .close()
        .unwrap();
    let sb = Superblock::decode(&sector(dev.as_ref(), 0))
        .unwrap()
        .unwrap();
    let z = dev.report_zones(ZoneFilter::All)[dev.info().conventional_zones as usize].clone();
    let ops1 = vec![
        (b"old1".to_vec(), Some(b"v1".to_vec())),
        (b"gone".to_vec(), Some(b"x".to_vec())),
    ];
    let mut p = encode_batch(1, &ops1);
    p.extend(encode_batch(3, &[(b"gone".to_vec(), None)]));
    let mut log = frame_v1(&p, SS as u64);
    log.extend(frame_v1(
        &encode_batch(4, &[(b"old2".to_vec(), Some(b"v2".to_vec()))]),
        SS as u64,
    ));
    dev.write(z.start_lba, &log).unwrap();
    // The manifest an older engine wrote: version 2, listing the log band.
    let generation = 10u64;
    let m = Manifest {
        generation,
        next_band_id: 1,
        log_zones: vec![z.index],
        ..Manifest::default()
    };
    let mut enc = m.encode();
    // Version 2's body ends before the (empty) list of log band ends version 4 added.
    enc.remove(enc.len() - 5);
    let body = u32::from_le_bytes(enc[20..24].try_into().unwrap()) - 1;
    enc[20..24].copy_from_slice(&body.to_le_bytes());
    enc[8..12].copy_from_slice(&2u32.to_le_bytes());
    let n = enc.len() - 4;
    let c = crc(&enc[..n]);
    enc[n..].copy_from_slice(&c.to_le_bytes());
    enc.resize(enc.len().div_ceil(SS) * SS, 0);
    // Slot `generation mod 2` = 0; `Db::create` wrote generation 1 to slot 1.
    dev.write(1 + (generation % 2) * sb.slot_sectors, &enc)
        .unwrap();
    dev.flush().unwrap();

    let db = Db::open(dev.clone(), tiny_opts()).unwrap();
    assert_eq!(db.get(b"old1").unwrap(), Some(b"v1".to_vec()));
    assert_eq!(db.get(b"gone").unwrap(), None);
    assert_eq!(db.get(b"old2").unwrap(), Some(b"v2".to_vec()));
    assert!(db.check().unwrap().is_ok());
    put(&db, b"new", b"v3", SYNCED);
    assert_eq!(
        dev.zone(z.index).unwrap().write_pointer_lba,
        z.start_lba + 2,
        "version 2 chunks went into a band of version 1 chunks"
    );
    crash(&disk, db);
    let dev = seen(disk.clone());
    let newest = (0..2u64)
        .map(|slot| sector(dev.as_ref(), 1 + slot * sb.slot_sectors))
        .filter_map(|s| Manifest::decode(&s).ok().map(|m| (m.generation, s)))
        .max_by_key(|(g, _)| *g)
        .unwrap();
    assert_eq!(
        Manifest::version_of(&newest.1),
        Some(tegula_smrdb::manifest::MANIFEST_VERSION)
    );
    let db = Db::open(dev, tiny_opts()).unwrap();
    for (k, v) in [
        (&b"old1"[..], &b"v1"[..]),
        (b"old2", b"v2"),
        (b"new", b"v3"),
    ] {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v));
    }
}

/// A chunk's first sector zeroed with valid chunks behind it: zeros end a log only where
/// nothing valid follows (a finished zone), so this is corruption, not the end of the log.
#[test]
fn a_zeroed_chunk_with_valid_chunks_after_it_is_corruption() {
    let (disk, dev) = three_synced_puts();
    let (z, first, _, _) = find_in_log(dev.as_ref(), b"a");
    assert!(chunks(dev.as_ref(), &z).len() >= 2);
    let s = sector(dev.as_ref(), first);
    for (i, b) in s.iter().enumerate() {
        if *b != 0 {
            flip(&disk, first, i, *b);
        }
    }
    assert!(sector(dev.as_ref(), first).iter().all(|&b| b == 0));
    let e = expect_corruption(&disk, &z, first);
    assert!(e.contains("zeroed sector"), "{e}");
}
