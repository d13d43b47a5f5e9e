//! What an fsync and a close cost in device cache flushes, counted on the drive: the figure
//! docs/ARCHITECTURE.md and docs/formats/fs.md give.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use std::sync::Arc;
use tegula_device::ZonedDevice;
use tegula_fs::{Fs, ROOT};

fn flushes(d: &tegula_device::Disk) -> u64 {
    d.stats().flushes
}

#[test]
fn an_fsync_costs_the_flushes_the_docs_give_and_a_close_none() {
    let d = disk(16, 16);
    let dev: Arc<dyn ZonedDevice> = d.clone();
    let mut fs = Fs::mkfs(dev, small_opts()).unwrap();
    let a = fs.create(ROOT, b"a", 0o644, 0, 0).unwrap();
    fs.open_file(a.ino).unwrap();
    let before = flushes(&d);
    fs.write(a.ino, 0, &vec![7u8; 1 << 20], false).unwrap();
    fs.fsync(a.ino).unwrap();
    let fsync = flushes(&d) - before;

    // An fsync with nothing new to write since the last costs the log record only.
    let before = flushes(&d);
    fs.fsync(a.ino).unwrap();
    let empty = flushes(&d) - before;

    // Closing a written file writes its buffer but flushes nothing.
    fs.write(a.ino, 1 << 20, &[8u8; 4096], false).unwrap();
    let before = flushes(&d);
    fs.release(a.ino).unwrap();
    let close = flushes(&d) - before;

    assert_eq!(
        (fsync, empty, close),
        (1, 0, 0),
        "device flushes of (an fsync after 1 MiB of writes, an fsync with nothing new, a close)"
    );
    fs.close().unwrap();
}
