//! The command line as a new user meets it: commands that would destroy data refuse unless
//! `--force`, interrupted commands keep what the drive completed, ranges are checked, and the
//! conventions of the tools storage engineers know (blkzone's zone ranges and units, redis-cli's
//! `-x`, binary-safe output, `--json`). Regression tests for the numbered defects of the
//! front-door issue.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::{
    fails_any, fails_with as fails, ok_json as json, ok_out as ok, run, tegula, tegula_cmd,
    wait_for,
};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

fn run_in(args: &[&str], input: &[u8]) -> Output {
    tegula(args, Some(input))
}

/// A 4 GiB host-managed image (16 zones of 256 MiB, zone 0 conventional).
fn image(dir: &Path, name: &str, extra: &[&str]) -> String {
    common::image(dir, name, "hm-smr", "4GiB", extra)
}

fn write_zone(img: &str, zone: &str, data: &[u8]) {
    let o = run_in(&["disk", "write", img, "--zone", zone], data);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn wp(img: &str, zone: u64) -> u64 {
    let z = json(&["disk", "report", img, "--json"]);
    z[zone as usize]["write_pointer_lba"].as_u64().unwrap()
        - z[zone as usize]["start_lba"].as_u64().unwrap()
}

/// Defect 1: `db create --banded 16MiB IMAGE` on a tegula disk image overwrote its header.
#[test]
fn db_create_banded_on_a_disk_image_is_refused_and_the_image_survives() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "d.img", &[]);
    write_zone(&img, "1", &[7u8; 8192]);
    fails(
        &["db", "create", "--banded", "16MiB", &img],
        "would overwrite it",
    );
    fails(
        &["db", "create", "--banded", "16MiB", "--force", &img],
        "would overwrite it",
    );
    // The image still opens, with its data.
    assert_eq!(wp(&img, 1), 2);
    let dm = common::image(dir.path(), "dm.img", "seagate-5tb-data", "1GiB", &[]);
    fails(&["db", "create", "--banded", "16MiB", &dm], "dm-smr image");
    fails(&["db", "create", &dm], "without zones");
}

/// Defect 1 on plain files: a file that holds a file system or data is not banded over
/// silently.
#[test]
fn db_create_banded_refuses_a_file_with_data_or_a_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("plain.bin");
    let mut data = vec![0u8; 64 << 20];
    data[1024 + 56] = 0x53;
    data[1024 + 57] = 0xEF;
    std::fs::write(&f, &data).unwrap();
    let fs_ = f.display().to_string();
    fails(&["db", "create", "--banded", "1MiB", &fs_], "ext2/3/4");
    data[1024 + 56] = 0;
    data[1024 + 57] = 0;
    data[40 << 20] = 1;
    std::fs::write(&f, &data).unwrap();
    fails(&["db", "create", "--banded", "1MiB", &fs_], "non-zero byte");
    ok(&["db", "create", "--banded", "1MiB", "--force", &fs_]);
    ok(&["db", "--banded", "1MiB", "put", &fs_, "k", "v"]);
    assert_eq!(ok(&["db", "--banded", "1MiB", "get", &fs_, "k"]), "v\n");
    // A second create finds the database.
    fails(
        &["db", "create", "--banded", "1MiB", &fs_],
        "already holds a database",
    );
}

/// Defect 2: `fs mkfs` on an image holding an SMRDB database or a file system overwrote it.
#[test]
fn mkfs_refuses_an_image_that_holds_a_database_a_file_system_or_data() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "d.img", &[]);
    ok(&["db", "create", &img]);
    ok(&["db", "put", &img, "key", "value"]);
    fails(&["fs", "mkfs", &img], "an SMRDB database");
    assert_eq!(ok(&["db", "get", &img, "key"]), "value\n");
    ok(&["fs", "mkfs", "--force", &img]);
    fails(&["fs", "mkfs", &img], "a tegula file system");
    fails(&["db", "create", &img], "a tegula file system");
    ok(&["fs", "check", &img]);
    // --force erases a database completely (both superblock copies): a new one goes on, with
    // none of the old keys, and over a file system too.
    let db = image(dir.path(), "db.img", &[]);
    ok(&["db", "create", &db]);
    ok(&["db", "put", &db, "old", "1"]);
    fails(&["db", "create", &db], "already holds a database");
    ok(&["db", "create", "--force", &db]);
    fails_any(&["db", "get", &db, "old"]);
    ok(&["db", "create", "--force", "--loc", &db]);
    ok(&["fs", "mkfs", "--force", &db]);
    ok(&["db", "create", "--force", &db]);
    // Data written straight to a zone counts too.
    let raw = image(dir.path(), "raw.img", &[]);
    write_zone(&raw, "5", &[1u8; 4096]);
    fails(&["fs", "mkfs", &raw], "sequential zone");
    fails(&["db", "create", &raw], "sequential zone");
    // An empty image needs no --force.
    let empty = image(dir.path(), "empty.img", &[]);
    ok(&["fs", "mkfs", &empty]);
}

/// Defect 6: `head -c 3GiB /dev/zero | tegula disk write w.img --zone 1`, Ctrl-C after 4 s:
/// 1.3 GiB were in the image, yet every zone reported empty.
#[test]
fn an_interrupted_disk_write_keeps_what_the_drive_completed() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "w.img", &[]);
    let mut child = tegula_cmd()
        .args(["disk", "write", &img, "--zone", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let chunk = vec![0u8; 1 << 20];
        // Far more than the zone holds: the writer stops on the signal, not on the input.
        for _ in 0..200 {
            if stdin.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    // Wait until some of it is in the image, then interrupt.
    let t0 = Instant::now();
    use std::os::unix::fs::MetadataExt;
    // The image is sparse: count the bytes allocated to it.
    while std::fs::metadata(&img).unwrap().blocks() * 512 < 16 << 20 {
        assert!(t0.elapsed() < Duration::from_secs(60), "nothing written");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: sending SIGINT to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted after writing"), "{err}");
    let bytes: u64 = err
        .split("interrupted after writing ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert!(bytes >= 1 << 20, "{err}");
    // The zone reports exactly what was acknowledged.
    assert_eq!(wp(&img, 1) * 4096, bytes);
}

/// Defect 7: a read at LBA 2^64-1 overflowed and "read 4096 bytes ... in 0 commands".
#[test]
fn reads_and_writes_past_the_end_are_range_errors() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "d.img", &[]);
    fails(
        &[
            "disk",
            "read",
            &img,
            "--lba",
            "18446744073709551615",
            "--len",
            "4096",
        ],
        "beyond the end of the drive",
    );
    fails(
        &["disk", "read", &img, "--lba", "1048575", "--len", "8192"],
        "beyond the end of the drive",
    );
}

/// Defect 8: `--conv-zones 17` on a 16-zone host-managed drive made a drive with no
/// sequential zone.
#[test]
fn a_host_managed_drive_needs_a_sequential_zone() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.img").display().to_string();
    for n in ["16", "17"] {
        fails(
            &[
                "disk",
                "create",
                "--capacity",
                "4GiB",
                "--conv-zones",
                n,
                &p,
            ],
            "no sequential zone",
        );
        assert!(!Path::new(&p).exists());
    }
    ok(&[
        "disk",
        "create",
        "--capacity",
        "4GiB",
        "--conv-zones",
        "15",
        &p,
    ]);
}

/// `disk report` takes a zone range and prints 512-byte sectors or bytes, like blkzone.
#[test]
fn report_takes_a_zone_range_and_a_unit() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "d.img", &[]);
    let z = json(&[
        "disk", "report", &img, "--zone", "3", "--count", "2", "--json",
    ]);
    let z = z.as_array().unwrap();
    assert_eq!(z.len(), 2);
    assert_eq!(z[0]["index"], 3);
    let lba = ok(&["disk", "report", &img, "--zone", "1", "--count", "1"]);
    let sec = ok(&[
        "disk", "report", &img, "--zone", "1", "--count", "1", "--unit", "sector",
    ]);
    let byte = ok(&[
        "disk", "report", &img, "--zone", "1", "--count", "1", "--unit", "byte",
    ]);
    // Zone 1 starts at LBA 65536 (4 KiB sectors): 524288 512-byte sectors, 256 MiB.
    assert!(lba.contains(" 65536 "), "{lba}");
    assert!(sec.contains(" 524288 "), "{sec}");
    assert!(byte.contains(" 268435456 "), "{byte}");
    fails(&["disk", "report", &img, "--zone", "16"], "16 zones");
}

/// `--json` on the data and zone commands.
#[test]
fn data_and_zone_commands_speak_json() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "d.img", &[]);
    let o = run_in(
        &["disk", "write", &img, "--zone", "2", "--json"],
        &[3u8; 10000],
    );
    assert!(o.status.success());
    let w: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(w["bytes"], 10000);
    assert_eq!(w["lba_start"], 131072);
    assert_eq!(w["lba_end"], 131075);
    assert_eq!(w["padded_bytes"], 2288);
    let out = dir.path().join("back.bin").display().to_string();
    let r = json(&[
        "disk", "read", &img, "--lba", "131072", "--len", "10000", "--out", &out, "--json",
    ]);
    assert_eq!(r["bytes"], 10000);
    assert_eq!(std::fs::read(&out).unwrap(), vec![3u8; 10000]);
    let f = json(&["disk", "finish", &img, "--zone", "2", "--json"]);
    assert_eq!(f["action"], "finish");
    assert_eq!(f["changed"][0]["zone"], 2);
    assert_eq!(f["changed"][0]["after"]["condition"], "full");
    let r = json(&["disk", "reset", &img, "--all", "--json"]);
    assert_eq!(r["changed"].as_array().unwrap().len(), 1);
}

/// `db put -x` takes the value from stdin (as redis-cli), `--file` from a file; `get` and
/// `scan` print binary values escaped, raw, hex or as JSON.
#[test]
fn db_values_are_binary_safe() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "d.img", &[]);
    ok(&["db", "create", &img]);
    let value = b"line one\nline\ttwo\x00\xff";
    let o = run_in(&["db", "put", &img, "bin", "-x"], value);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let f = dir.path().join("v");
    std::fs::write(&f, b"from a file").unwrap();
    ok(&[
        "db",
        "put",
        &img,
        "file",
        "--file",
        &f.display().to_string(),
    ]);
    assert_eq!(
        ok(&["db", "get", &img, "bin"]),
        "line one\\nline\\ttwo\\x00\\xff\n"
    );
    let raw = run(&["db", "get", &img, "bin", "--raw"]);
    assert_eq!(raw.stdout, value);
    assert_eq!(
        ok(&["db", "get", &img, "file", "--hex"]),
        "66726f6d20612066696c65\n"
    );
    let j = json(&["db", "get", &img, "bin", "--json"]);
    assert_eq!(j["key"], "bin");
    assert_eq!(j["value_hex"], "6c696e65206f6e650a6c696e650974776f00ff");
    let scan = ok(&["db", "scan", &img]);
    assert_eq!(scan.lines().count(), 2, "one line per entry: {scan}");
    let j = json(&["db", "scan", &img, "--json"]);
    assert_eq!(j.as_array().unwrap().len(), 2);
    assert_eq!(j[1]["value"], "from a file");
    let j = json(&["db", "check", &img, "--json"]);
    assert_eq!(j["ok"], true);
    fails(&["db", "get", &img, "missing"], "not found");
}

/// A plain file banded like SMR holds a database across commands (the layout is in the `.zones`
/// sidecar, the write pointers in two slots after the zones); without `--banded` it is not an
/// image; `--capacity` is for create.
#[test]
fn a_plain_file_banded_like_smr_holds_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain.bin").display().to_string();
    // Only `create` makes a banded device: any other command refuses a plain file without a
    // `.zones` descriptor and leaves it byte-identical (no state slots laid over its tail).
    let before: Vec<u8> = (0..(3u32 << 20)).map(|i| (i % 251) as u8).collect();
    std::fs::write(&file, &before).unwrap();
    for cmd in [
        &["db", "check", "--banded", "1MiB", &file][..],
        &["db", "put", "--banded", "1MiB", &file, "k", "v"][..],
        &["db", "get", "--banded", "1MiB", &file, "k"][..],
        &["db", "stats", "--banded", "1MiB", &file][..],
        &["serve", "resp", "--banded", "1MiB", &file, "--port", "0"][..],
    ] {
        fails(cmd, "not a banded device");
        assert!(
            std::fs::read(&file).unwrap() == before,
            "{cmd:?} changed the file"
        );
        assert!(!Path::new(&format!("{file}.zones")).exists(), "{cmd:?}");
    }
    std::fs::remove_file(&file).unwrap();
    ok(&[
        "db",
        "create",
        "--banded",
        "1MiB",
        "--capacity",
        "32MiB",
        &file,
    ]);
    // 32 zones of 1 MiB, then two 36 KiB state slots (docs/formats/host-banded.md).
    let size = (32 << 20) + 2 * 36864;
    assert_eq!(std::fs::metadata(&file).unwrap().len(), size);
    for i in 0..50 {
        ok(&[
            "db",
            "put",
            "--banded",
            "1MiB",
            &file,
            &format!("k{i:03}"),
            &"v".repeat(20000),
        ]);
    }
    ok(&["db", "compact", "--banded", "1MiB", &file]);
    assert_eq!(
        ok(&["db", "get", "--banded", "1MiB", &file, "k023"]).len(),
        20001
    );
    ok(&["db", "check", "--banded", "1MiB", &file]);
    fails(&["db", "check", &file], "--banded");
    fails(
        &[
            "db",
            "check",
            "--banded",
            "1MiB",
            "--capacity",
            "64MiB",
            &file,
        ],
        "--capacity",
    );
    assert_eq!(std::fs::metadata(&file).unwrap().len(), size);
    // A damaged state slot is passed over with a warning on stderr, and the database is whole.
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[(32 << 20) + 100] ^= 0xff;
    std::fs::write(&file, &bytes).unwrap();
    let out = tegula(&["db", "check", "--banded", "1MiB", &file], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning:") && err.contains("zone state slot A"),
        "{err}"
    );
}

/// SIGTERM to `tegula serve nbd`: the server lets its connections finish, makes every
/// acknowledged write durable (also ones never flushed by the client), saves the drive state
/// and removes its socket.
#[test]
fn serve_nbd_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "d.img", &["--set", "store_data=true"]);
    let sock: PathBuf = dir.path().join("s.sock");
    let mut server = tegula_cmd()
        .args(["serve", "nbd", "--socket"])
        .arg(&sock)
        .arg(&img)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&sock, 20);
    let uri = format!("nbd+unix:///?socket={}", sock.display());
    let mut c = tegula_nbd::NbdClient::connect(&uri).unwrap();
    // Zone 0 is conventional: write anywhere in it, no flush.
    c.write(8192, &[0x5a; 4096], false).unwrap();
    // The client stays connected; the server must still stop.
    // SAFETY: signalling our own child.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let status = server.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut server.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(err.contains("stopped"), "{err}");
    assert!(!sock.exists(), "socket left behind");
    drop(c);
    let back = dir.path().join("back").display().to_string();
    ok(&[
        "disk", "read", &img, "--lba", "2", "--len", "4096", "--out", &back,
    ]);
    assert_eq!(std::fs::read(&back).unwrap(), vec![0x5a; 4096]);
}

/// Defect 9: a flipped byte in the primary superblock of a tegula fs image: `fs check` said
/// "no inconsistencies" and silently used the second copy. Now it reports the bad copy and
/// `--repair` rewrites it from the good one.
#[test]
fn fs_check_reports_a_damaged_superblock_copy_and_repair_rewrites_it() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "fs.img", &[]);
    ok(&["fs", "mkfs", &img]);
    ok(&["fs", "check", &img]);
    let sb = dir.path().join("sb").display().to_string();
    ok(&[
        "disk", "read", &img, "--lba", "0", "--len", "4096", "--out", &sb,
    ]);
    let mut b = std::fs::read(&sb).unwrap();
    b[20] ^= 0x40;
    let o = run_in(&["disk", "write", &img, "--lba", "0"], &b);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // fsck's exit codes: 4 for errors left, 1 for errors corrected, 0 for clean.
    let e = fails_any(&["fs", "check", &img]);
    assert!(e.contains("1 problem left uncorrected"), "{e}");
    assert_eq!(run(&["fs", "check", &img]).status.code(), Some(4));
    let out = String::from_utf8_lossy(&run(&["fs", "check", &img]).stdout).into_owned();
    assert!(out.contains("superblock copy A"), "{out}{e}");
    let j = common::json(&run(&["fs", "check", &img, "--json"]));
    assert!(
        j["problems"][0].as_str().unwrap().contains("superblock"),
        "{j}"
    );
    let o = run(&["fs", "check", "--repair", &img]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let fixed = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(fixed.contains("repaired:"), "{fixed}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("1 error found and corrected"));
    assert!(ok(&["fs", "check", &img]).contains("no inconsistencies"));
    // The copy on disk is the good bytes again.
    ok(&[
        "disk", "read", &img, "--lba", "0", "--len", "4096", "--out", &sb,
    ]);
    b[20] ^= 0x40;
    assert_eq!(std::fs::read(&sb).unwrap(), b);
}

/// `disk check` examines an image without changing it: clean images say so (text and JSON);
/// something that is not an image is refused.
#[test]
fn disk_check_reports_clean_images_and_refuses_other_files() {
    let dir = tempfile::tempdir().unwrap();
    let dm = common::image(dir.path(), "dm.img", "seagate-5tb-data", "1GiB", &[]);
    let o = run_in(&["disk", "write", &dm, "--lba", "100"], &[7u8; 65536]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(ok(&["disk", "check", &dm]).contains("clean"));
    let j = json(&["disk", "check", &dm, "--json"]);
    assert_eq!(j["clean"], true);
    let img = image(dir.path(), "d.img", &[]);
    assert!(ok(&["disk", "check", &img]).contains("clean"));
    let other = dir.path().join("other");
    std::fs::write(&other, b"not an image").unwrap();
    fails(
        &["disk", "check", &other.display().to_string()],
        "not a tegula disk or dm-smr image",
    );
}

/// A zone-files directory: made by `db create --zone-files`, then recognised by every command
/// without flags; never laid over a directory with other files, or over a file.
#[test]
fn db_on_a_zone_files_directory() {
    let dir = tempfile::tempdir().unwrap();
    let z = dir.path().join("kv.zones").display().to_string();
    ok(&[
        "db",
        "create",
        "--zone-files",
        "1MiB",
        "--capacity",
        "32MiB",
        &z,
    ]);
    assert!(Path::new(&z).join("zones").is_file());
    ok(&["db", "put", &z, "k", "v"]);
    assert_eq!(ok(&["db", "get", &z, "k"]), "v\n");
    ok(&["db", "check", &z]);
    fails(
        &[
            "db",
            "create",
            "--zone-files",
            "1MiB",
            "--capacity",
            "32MiB",
            &z,
        ],
        "already holds a database",
    );
    let y = dir.path().join("y.zones").display().to_string();
    fails(
        &["db", "create", "--zone-files", "1MiB", &y],
        "needs a capacity",
    );
    fails(
        &[
            "db",
            "create",
            "--zone-files",
            "1000",
            "--capacity",
            "32MiB",
            &y,
        ],
        "not a positive multiple of the sector size",
    );
    assert!(!Path::new(&y).join("zones").exists());
    let busy = dir.path().join("busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(busy.join("keep"), b"mine").unwrap();
    let b = busy.display().to_string();
    fails(
        &[
            "db",
            "create",
            "--zone-files",
            "1MiB",
            "--capacity",
            "32MiB",
            &b,
        ],
        "not empty",
    );
    assert_eq!(std::fs::read(busy.join("keep")).unwrap(), b"mine");
    let f = dir.path().join("file.bin");
    std::fs::write(&f, b"data").unwrap();
    let fs_ = f.display().to_string();
    fails(
        &[
            "db",
            "create",
            "--zone-files",
            "1MiB",
            "--capacity",
            "32MiB",
            &fs_,
        ],
        "is a file",
    );
}
