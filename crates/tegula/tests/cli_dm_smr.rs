//! The command contract of drive-managed SMR drives, end to end through the `tegula` binary:
//! `disk create --config` with `kind = "dm-smr"`, `disk info|stats|read|write|dump` on the
//! image, `serve nbd` of the image (checked with `nbdinfo`/`nbdcopy` when installed; a visible
//! SKIPPED line otherwise), and clear errors — never a panic — for bad configurations and
//! damaged images.
#![allow(clippy::unwrap_used)]

mod common;

use common::{fails, have, ok_in, skip, tegula_cmd, wait_for};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SMALL: &str =
    "kind = \"dm-smr\"\ncapacity = \"64MiB\"\nstl = \"journal\"\nband_size = \"4MiB\"\n\
cache_size = \"16MiB\"\njournal_entry_min = \"64KiB\"\njournal_entry_quantum = \"64KiB\"\n\
journal_entry_max = \"1MiB\"\njournal_oob = \"64KiB\"\nmap_entries = 4000\nmap_entry_bytes = 16\n";

fn config(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `len` bytes of `img` from `lba`, read with `disk read --out` into a file in `dir`.
fn read_back(dir: &Path, img: &Path, lba: u64, len: usize) -> Vec<u8> {
    let back = dir.join("back.bin");
    let (lba, len) = (lba.to_string(), len.to_string());
    let args = [
        "disk",
        "read",
        s(img),
        "--lba",
        &lba,
        "--len",
        &len,
        "--out",
        s(&back),
    ];
    ok_in(&args, None);
    std::fs::read(&back).unwrap()
}

#[test]
fn create_write_read_stats_info_dump_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "drive.toml", SMALL);
    let img = dir.path().join("drive.img");
    let out = ok_in(&["disk", "create", "--config", s(&cfg), s(&img)], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("dm-smr"), "{text}");
    let data: Vec<u8> = (0..3 << 20).map(|i: u32| (i * 7 + 3) as u8).collect();
    ok_in(&["disk", "write", s(&img), "--lba", "100"], Some(&data));
    assert!(
        read_back(dir.path(), &img, 100, data.len()) == data,
        "read back differs"
    );
    let out = ok_in(&["disk", "stats", s(&img), "--json"], None);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let st = &v["stl"];
    for key in [
        "cache_used_bytes",
        "cache_bytes",
        "journal_entries",
        "map_entries",
        "map_merges",
        "cleaning_runs",
        "bands_cleaned",
        "cleaning_bytes_read",
        "cleaning_bytes_written",
        "cleaning_ns",
    ] {
        assert!(st[key].is_u64(), "stats lack {key}: {v}");
    }
    assert!(st["journal_entries"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(st["stl"], "journal");
    let out = ok_in(&["disk", "info", s(&img), "--json"], None);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["capacity_bytes"], 64 << 20);
    assert_eq!(v["config"]["kind"], "dm-smr");
    ok_in(&["disk", "info", s(&img)], None);
    ok_in(&["disk", "stats", s(&img)], None);
    let out = ok_in(&["disk", "dump", s(&img)], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("checkpoint generation"), "{text}");
    // Zone commands refuse a drive without zones, clearly.
    let err = fails(&["disk", "report", s(&img)]);
    assert!(err.contains("dm-smr"), "{err}");
    fails(&["disk", "reset", s(&img), "--all"]);
}

#[test]
fn shipped_configs_create_metadata_only_images() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../stl/profiles");
    for name in [
        "seagate-5tb.toml",
        "emulated-smr-1.toml",
        "emulated-smr-2.toml",
        "emulated-smr-3.toml",
    ] {
        let img = dir.path().join(format!("{name}.img"));
        ok_in(
            &["disk", "create", "--config", s(&root.join(name)), s(&img)],
            None,
        );
        let out = ok_in(&["disk", "stats", s(&img), "--json"], None);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            v["stl"]["cache_bytes"].as_u64().unwrap() > 1 << 30,
            "{name}: {v}"
        );
        use std::os::unix::fs::MetadataExt;
        let used = std::fs::metadata(&img).unwrap().blocks() * 512;
        assert!(used < 64 << 20, "{name}: {used} bytes allocated");
    }
}

#[test]
fn bad_configurations_and_damaged_images_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "unknown key",
            format!("{SMALL}bogus_key = 1\n"),
            "bogus_key",
        ),
        (
            "bad value",
            format!("{SMALL}cleaning = \"sometimes\"\n"),
            "cleaning",
        ),
        ("bad size", SMALL.replace("\"64MiB\"", "\"lots\""), "lots"),
        (
            "not TOML",
            "kind = \"dm-smr\"\ncapacity = [".into(),
            "TOML parse error",
        ),
        (
            "flash with a journal",
            format!("{SMALL}cache_media = \"flash\"\n"),
            "flash",
        ),
        (
            "cache too small",
            SMALL.replace("\"16MiB\"", "\"64KiB\""),
            "too small",
        ),
        (
            "unknown media",
            format!("{SMALL}media = \"floppy\"\n"),
            "floppy",
        ),
        (
            "impossible capacity",
            SMALL.replace("\"64MiB\"", "\"900PB\""),
            "capacity",
        ),
    ];
    for (what, text, needle) in cases {
        let cfg = config(dir.path(), "bad.toml", &text);
        let img = dir.path().join("bad.img");
        let err = fails(&["disk", "create", "--config", s(&cfg), s(&img)]);
        assert!(
            err.to_lowercase().contains(&needle.to_lowercase()),
            "{what}: {err}"
        );
        assert!(
            !img.exists(),
            "{what}: a failed create left {}",
            img.display()
        );
    }
    // A damaged image: header flipped, then truncated.
    let cfg = config(dir.path(), "drive.toml", SMALL);
    let img = dir.path().join("drive.img");
    ok_in(&["disk", "create", "--config", s(&cfg), s(&img)], None);
    let mut bytes = std::fs::read(&img).unwrap();
    bytes[30] ^= 0xFF;
    std::fs::write(&img, &bytes).unwrap();
    let err = fails(&["disk", "stats", s(&img)]);
    assert!(err.contains("checksum"), "{err}");
    fails(&[
        "serve",
        "nbd",
        "--socket",
        s(&dir.path().join("x.sock")),
        s(&img),
    ]);
    bytes[30] ^= 0xFF;
    bytes.truncate(200_000);
    std::fs::write(&img, &bytes).unwrap();
    let err = fails(&["disk", "info", s(&img)]);
    assert!(err.contains("truncated") || err.contains("state"), "{err}");
}

#[test]
fn serve_nbd_exports_a_dm_smr_image() {
    if !have("nbdinfo") || !have("nbdcopy") {
        return skip("nbdinfo/nbdcopy not installed (apt install libnbd-bin)");
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "drive.toml", SMALL);
    let img = dir.path().join("drive.img");
    ok_in(&["disk", "create", "--config", s(&cfg), s(&img)], None);
    let sock = dir.path().join("drive.sock");
    let mut server = tegula_cmd()
        .args(["serve", "nbd", "--socket", s(&sock), s(&img)])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&sock, 20);
    let uri = format!("nbd+unix:///?socket={}", sock.display());
    let info = Command::new("nbdinfo").arg(&uri).output().unwrap();
    let text = String::from_utf8_lossy(&info.stdout).into_owned();
    let src = dir.path().join("src.bin");
    let data: Vec<u8> = (0..4u32 << 20).map(|i| (i * 13 + 1) as u8).collect();
    std::fs::write(&src, &data).unwrap();
    let copy = Command::new("nbdcopy")
        .arg(&src)
        .arg(&uri)
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert!(text.contains("export-size: 67108864"), "{text}");
    assert!(
        copy.status.success(),
        "{}",
        String::from_utf8_lossy(&copy.stderr)
    );
    // The server was killed, not closed: the image still holds every byte nbdcopy wrote.
    assert!(read_back(dir.path(), &img, 0, data.len()) == data);
    let out = ok_in(&["disk", "stats", s(&img), "--json"], None);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["stl"]["map_entries"].as_u64().unwrap() > 0, "{v}");
}
