//! Interlaced (imr) drives from the command line: create and info show the top and bottom
//! tracks, `disk tracks` lists them, and a `disk write` to a bottom track breaks the rule on
//! purpose: the neighbouring top track then reads back as a media error until rewritten, and
//! `disk stats` counts the bytes per track kind and the destroyed sectors.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use serde_json::Value;

fn tracks(img: &str, from: u64, count: u64) -> Vec<Value> {
    let j = ok_json(&[
        "disk",
        "tracks",
        img,
        "--from",
        &from.to_string(),
        "--count",
        &count.to_string(),
        "--json",
    ]);
    j.as_array().unwrap().clone()
}

#[test]
fn create_and_info_show_top_and_bottom_tracks() {
    let d = tempfile::tempdir().unwrap();
    let img = image(d.path(), "imr.img", "imr", "4GiB", &[]);
    let info = ok_json(&["disk", "info", &img, "--json"]);
    assert_eq!(info["info"]["kind"], "imr");
    let bottom = info["geometry"]["bottom_tracks"].as_u64().unwrap();
    let top = info["geometry"]["top_tracks"].as_u64().unwrap();
    assert!(bottom > 1000 && bottom.abs_diff(top) <= 1, "{bottom} {top}");
    assert_eq!(info["config"]["interlace"]["damage"], true);
    let text = ok_out(&["disk", "info", &img]);
    assert!(text.contains("bottom") && text.contains("top"), "{text}");
    let t = tracks(&img, 0, 4);
    let kinds: Vec<&str> = t.iter().map(|x| x["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["bottom", "top", "bottom", "top"]);
    assert!(t[1]["sectors"].as_u64() < t[0]["sectors"].as_u64());
    // The CMR twin: same tracks, no damage.
    let twin = image(
        d.path(),
        "twin.img",
        "imr",
        "4GiB",
        &["--set", "interlace.damage=false"],
    );
    let ti = ok_json(&["disk", "info", &twin, "--json"]);
    assert_eq!(ti["geometry"]["top_tracks"], info["geometry"]["top_tracks"]);
    assert_eq!(ti["config"]["interlace"]["damage"], false);
    // Other drives have no tracks to list.
    let hm = image(d.path(), "hm.img", "hm-smr", "1GiB", &[]);
    fails_with(&["disk", "tracks", &hm], "interlaced");
}

#[test]
fn writing_a_bottom_track_destroys_its_top_neighbour_until_rewritten() {
    let d = tempfile::tempdir().unwrap();
    let img = image(d.path(), "imr.img", "imr", "1GiB", &[]);
    let t = tracks(&img, 1, 2);
    let (top, bottom) = (&t[0], &t[1]);
    assert_eq!(
        (top["kind"].as_str(), bottom["kind"].as_str()),
        (Some("top"), Some("bottom"))
    );
    let lba = |v: &Value| v["lba"].as_u64().unwrap().to_string();
    let bytes = |v: &Value| (v["sectors"].as_u64().unwrap() * 4096) as usize;
    let top_data = vec![0x5au8; bytes(top)];
    ok_in(
        &["disk", "write", &img, "--lba", &lba(top)],
        Some(&top_data),
    );
    let back = ok(&["disk", "read", &img, "--lba", &lba(top), "--len", "4096"]);
    assert_eq!(back.stdout, vec![0x5au8; 4096]);
    // Break the rule: write the bottom track next to it.
    let o = ok_in(
        &["disk", "write", &img, "--lba", &lba(bottom)],
        Some(&vec![0xa5u8; bytes(bottom)]),
    );
    let note = stderr(&o);
    assert!(
        note.contains("destroyed") && note.contains("top track"),
        "{note}"
    );
    fails_with(
        &["disk", "read", &img, "--lba", &lba(top), "--len", "4096"],
        "neighbouring bottom track",
    );
    let s = ok_json(&["disk", "stats", &img, "--json"]);
    assert_eq!(
        s["stats"]["bottom_bytes_written"].as_u64(),
        Some(bytes(bottom) as u64)
    );
    assert_eq!(
        s["stats"]["top_bytes_written"].as_u64(),
        Some(bytes(top) as u64)
    );
    assert!(s["destroyed_sectors"].as_u64().unwrap() >= top["sectors"].as_u64().unwrap());
    let text = ok_out(&["disk", "stats", &img]);
    assert!(text.contains("destroyed by bottom writes"), "{text}");
    // Rewriting the top track heals it.
    ok_in(
        &["disk", "write", &img, "--lba", &lba(top)],
        Some(&top_data),
    );
    let back = ok(&["disk", "read", &img, "--lba", &lba(top), "--len", "4096"]);
    assert_eq!(back.stdout, vec![0x5au8; 4096]);
}
