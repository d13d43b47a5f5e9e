//! No silent rollback (issue 33): one flipped byte in the newest copy of any structure of a
//! drive-managed SMR image — the header, the newest drive-state slot, the current metadata
//! slot's checkpoint, records, tail copy and the older slot's seal — either leaves every
//! acknowledged write readable or refuses the open with a typed error. A seeded campaign over
//! more than 500 positions counts the outcomes; none may be silent.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::{tiny_config, SS};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::Path;
use tegula_device::BlockDevice;
use tegula_stl::image::{decode_drive_state, decode_header, encode_drive_state, encode_header};
use tegula_stl::metalog::{decode_frame, KIND_SEAL};
use tegula_stl::DmDrive;

/// Every acknowledged write reads back as `model` says.
fn reads_as(d: &DmDrive, model: &BTreeMap<u64, u8>) -> bool {
    model.iter().all(|(&lba, &v)| {
        let mut b = vec![0u8; SS];
        d.read(lba, &mut b).is_ok() && b.iter().all(|&x| x == v)
    })
}

/// The byte ranges of the newest copy of every metadata structure of the image `bytes`:
/// (what, start, length).
fn structures(bytes: &[u8]) -> Vec<(String, u64, usize)> {
    let h = decode_header(&bytes[..64 << 10]).unwrap();
    let mut out = vec![("header".to_string(), 0, encode_header(&h).len())];
    let states: Vec<_> = (0..2u64)
        .filter_map(|i| {
            let at = h.state_offset + i * h.state_slot;
            let s = decode_drive_state(&bytes[at as usize..(at + h.state_slot) as usize]).ok()?;
            Some((s.seq, at, encode_drive_state(&s).len()))
        })
        .collect();
    let (_, at, len) = *states.iter().max().unwrap();
    out.push(("newest drive-state slot".into(), at, len));
    // The metadata slots: the newest checkpoint's frames, and whatever ends the older slot.
    let mut slots = Vec::new();
    for slot in 0..2u64 {
        let base = (h.meta_offset + slot * h.meta_slot) as usize;
        let mut frames = Vec::new();
        let mut off = 0;
        while let Ok((fh, _, n)) = decode_frame(&bytes[base + off..]) {
            frames.push((fh.kind, fh.gen, base + off, n));
            off += n;
        }
        slots.push(frames);
    }
    let newest = (0..2)
        .max_by_key(|&s| slots[s].first().map(|f| f.1))
        .unwrap();
    for (i, &(kind, gen, at, n)) in slots[newest].iter().enumerate() {
        let what = match (i, kind) {
            (0, _) => format!("checkpoint of generation {gen}"),
            (_, 3) => "the last record's tail copy".into(),
            _ => format!("record {i}"),
        };
        out.push((what, at as u64, n));
    }
    for &(kind, gen, at, n) in &slots[1 - newest] {
        if kind == KIND_SEAL {
            out.push((format!("seal of generation {gen}"), at as u64, n));
        }
    }
    out
}

#[test]
fn no_single_flipped_byte_in_a_dm_smr_image_is_a_silent_rollback() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.img");
    let d = DmDrive::create_image(&path, tiny_config("48MiB", "journal", "")).unwrap();
    let cap = d.info().capacity_sectors;
    let mut model = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(33);
    // Enough writes that the log moves to its second slot (sealing the first) and goes on.
    let lbas: Vec<u64> = (0..300).map(|_| rng.gen_range(0..cap)).collect();
    for i in 0..12_000u64 {
        let lba = lbas[rng.gen_range(0..lbas.len())];
        let v = (i % 250) as u8 + 1;
        d.write(lba, &vec![v; SS]).unwrap();
        model.insert(lba, v);
        if i % 500 == 499 {
            d.flush().unwrap();
        }
    }
    d.close().unwrap();
    let good = std::fs::read(&path).unwrap();
    let structs = structures(&good);
    assert!(
        structs.iter().any(|s| s.0.starts_with("seal")),
        "the workload never moved the log to its other slot: {:?}",
        &structs[..3]
    );
    assert!(structs.iter().any(|s| s.0.contains("tail copy")));
    // Every byte of the seal, the last record and its tail copy (where a flip used to pass
    // for a torn tail); 64 seeded positions in each other structure but the records, and 400
    // spread over all the records.
    let mut positions = Vec::new();
    let n = structs.len();
    let mut record_bytes = Vec::new();
    for (i, (what, at, len)) in structs.iter().enumerate() {
        let whole = what.starts_with("seal") || i + 2 >= n;
        if whole {
            positions.extend((0..*len as u64).map(|k| (what.clone(), at + k)));
        } else if what.starts_with("record") {
            record_bytes.extend((0..*len as u64).map(|k| (what.clone(), at + k)));
        } else {
            positions.extend((0..64).map(|_| (what.clone(), at + rng.gen_range(0..*len) as u64)));
        }
    }
    for _ in 0..400 {
        positions.push(record_bytes[rng.gen_range(0..record_bytes.len())].clone());
    }
    assert!(positions.len() >= 500, "{}", positions.len());
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let (mut same, mut refused, mut reported) = (0, 0, 0);
    let mut silent = Vec::new();
    for (what, at) in &positions {
        let byte = good[*at as usize];
        f.write_all_at(&[byte ^ (1 << (at % 8))], *at).unwrap();
        match DmDrive::open_image(&path, true) {
            Err(_) => refused += 1,
            Ok(d) => {
                let warned = !d.open_warnings().is_empty();
                let ok = reads_as(&d, &model);
                drop(d);
                if !ok {
                    silent.push(format!("{what} byte {at}: wrong data (warned: {warned})"));
                } else if warned || flagged(&path) {
                    reported += 1;
                } else {
                    same += 1;
                }
            }
        }
        f.write_all_at(&[byte], *at).unwrap();
    }
    assert!(
        std::fs::read(&path).unwrap() == good,
        "a read-only open wrote"
    );
    eprintln!(
        "dm-smr flip campaign: {} flips over {} structures: {same} read back whole with no \
         finding, {reported} whole and reported, {refused} refused, {} silent",
        positions.len(),
        structs.len(),
        silent.len()
    );
    assert!(silent.is_empty(), "{silent:#?}");
}

/// Whether a check of the image reports anything (a note, a warning or an error).
fn flagged(path: &Path) -> bool {
    DmDrive::check(path).map_or(true, |r| !r.findings.is_empty())
}
