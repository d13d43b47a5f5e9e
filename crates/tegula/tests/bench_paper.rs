//! `tegula bench paper …` end to end through the binary, each subcommand at a tiny scale:
//! the output files exist and hold plausible values. `zeafs` needs db_bench and FUSE (and for
//! its ext4 drives root, nbdfuse, losetup and mkfs.ext4); without them it prints
//! `SKIPPED: <reason>` and passes (or runs only the drives it can).
#![allow(clippy::unwrap_used)]

mod common;

use common::{ok_out, run, skip};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn assert_svg(p: &Path) {
    let s = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(s.contains("<svg"), "{} is not SVG", p.display());
    // A chart with data draws lines or rectangles, not only axes.
    assert!(
        s.contains("<polyline") || s.contains("<rect"),
        "{} holds no data",
        p.display()
    );
}

/// A drive by its built-in profile name (tegula knows them without repository files).
fn config(name: &str) -> String {
    name.to_string()
}

#[test]
fn paper_smrdb_writes_tables_results_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("smrdb");
    let md = ok_out(&[
        "bench",
        "paper",
        "smrdb",
        "--scale",
        "tiny",
        "--profiles",
        "hm-smr",
        "--figures",
        "7,9,14",
        "--no_progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    for fig in ["## Figure 7", "## Figures 9 and 10", "## Figures 14 and 15"] {
        assert!(md.contains(fig), "{fig} missing from stdout");
    }
    assert!(!md.contains("## Figure 8"), "figure 8 was not asked for");
    assert_eq!(
        std::fs::read_to_string(out.join("paper-smrdb.md")).unwrap(),
        md
    );
    let r = json(&out.join("results.json"));
    let arr = r.as_array().unwrap();
    assert!(!arr.is_empty());
    for o in arr {
        assert!(o["device_seconds"].as_f64().unwrap() > 0.0, "{o}");
        assert!(o["ops"].as_u64().unwrap() > 0, "{o}");
    }
    let load = arr
        .iter()
        .find(|o| o["benchmark"] == "fig14-tegula-ycsb-load")
        .unwrap();
    assert_eq!(load["ops"], 768);
    for svg in [
        "fig07-raw-seq-write.svg",
        "fig09-random-put.svg",
        "fig10-compaction-bytes.svg",
        "fig14-ycsb.svg",
        "fig15-ycsb-load-over-time.svg",
    ] {
        assert_svg(&out.join(svg));
    }
}

#[test]
fn paper_zea_writes_figure_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("zea");
    let md = ok_out(&[
        "bench",
        "paper",
        "zea",
        "--scale",
        "tiny",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(md.contains("### (a) Start-up discovery"), "{md}");
    let v = json(&out.join("zea-figure2.json"));
    let a = v["discovery"].as_array().unwrap();
    assert_eq!(a.len(), 4, "2 back-pointer counts x 2 extent counts");
    for p in a {
        assert!(p["forward_device_s"].as_f64().unwrap() > 0.0, "{p}");
        let (bp, n) = (
            p["back_pointers"].as_u64().unwrap(),
            p["extents"].as_u64().unwrap(),
        );
        let skips = p["skip_reads"].as_u64().unwrap();
        // With one back pointer the skip pass reads every metadata block; with more it jumps.
        if bp == 1 {
            assert_eq!(skips, n, "{p}");
        } else {
            assert!(skips < n / 2, "{p}");
        }
    }
    for part in ["writes", "reads"] {
        let pts = v[part].as_array().unwrap();
        assert_eq!(pts.len(), 2, "{part}");
        for p in pts {
            let (zea, raw) = (
                p["zea_mb_s"].as_f64().unwrap(),
                p["raw_mb_s"].as_f64().unwrap(),
            );
            assert!(zea > 0.0 && raw > 0.0, "{p}");
            // ZEA adds a metadata block per extent: never faster than raw I/O by much, never
            // more than a few times slower.
            assert!(zea <= raw * 1.05 && zea * 5.0 >= raw, "{part}: {p}");
        }
    }
    for svg in ["zea-figure2a.svg", "zea-figure2b.svg", "zea-figure2c.svg"] {
        assert_svg(&out.join(svg));
    }
}

#[test]
fn paper_stl_signatures_reproduces_the_seagate_signature() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sig");
    let cfg = config("seagate-5tb");
    let md = ok_out(&[
        "bench",
        "paper",
        "stl-signatures",
        &cfg,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(md.contains("| seagate-5tb |"), "{md}");
    let v = json(&out.join("stl-signatures.json"));
    let s = &v.as_array().unwrap()[0];
    assert_eq!(s["qd1_writes"], 720);
    assert_eq!(s["qd1_latency_ms"].as_array().unwrap().len(), 720);
    // Skylight's signature of this drive: ~25-30 ms per QD1 write, a map merge every 240th.
    let mean = s["qd1_latency_ms_mean"].as_f64().unwrap();
    assert!((20.0..40.0).contains(&mean), "{mean}");
    assert_eq!(s["slow_writes_at"], serde_json::json!([239, 479, 719]));
    // Queued writes are packed into few journal entries: far faster than one at a time.
    let (qd1, qd31) = (
        s["qd1_256_writes_ms"].as_f64().unwrap(),
        s["qd31_256_writes_ms"].as_f64().unwrap(),
    );
    assert!(qd31 * 10.0 < qd1, "{qd1} vs {qd31}");
    assert!(
        s["fragmented_read_ms_per_block_after_30s_idle"]
            .as_f64()
            .unwrap()
            < s["fragmented_read_ms_per_block_before"].as_f64().unwrap()
    );
    assert_svg(&out.join("stl-signatures-qd1.svg"));
    assert!(out.join("stl-signatures.md").exists());
}

#[test]
fn paper_stl_speed_measures_memory_and_image_backings() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("speed");
    let cfg = config("seagate-5tb");
    let md = ok_out(&[
        "bench",
        "paper",
        "stl-speed",
        "--writes",
        "300",
        "--config",
        &cfg,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        md.contains("| 300 | memory |") && md.contains("| 300 | image |"),
        "{md}"
    );
    let v = json(&out.join("stl-speed.json"));
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for r in rows {
        assert_eq!(r["writes"], 300);
        assert!(r["writes_per_wall_s"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["journal_entries"], 300, "{r}");
    }
    // The modelled drive does not care where its metadata is kept.
    assert_eq!(rows[0]["modelled_s"], rows[1]["modelled_s"]);
}

#[test]
fn paper_commands_refuse_bad_arguments() {
    let o = run(&[
        "bench",
        "paper",
        "stl-signatures",
        "/no/such.toml",
        "--out",
        "/tmp/x",
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("/no/such.toml"), "{e}");
    let o = run(&["bench", "paper", "zeafs", "--drives", "floppy"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("floppy"));
    assert!(!run(&["bench", "paper", "zea", "--scale", "huge"])
        .status
        .success());
}

fn missing(tools: &[&str]) -> Vec<String> {
    tools
        .iter()
        .filter(|t| {
            !Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {t}"))
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(|t| t.to_string())
        .collect()
}

#[test]
fn paper_zeafs_runs_db_bench_on_each_drive_it_can() {
    let m = missing(&["db_bench", "fusermount3"]);
    if !m.is_empty() || !Path::new("/dev/fuse").exists() {
        skip(&format!(
            "paper zeafs needs db_bench (rocksdb-tools), fusermount3 and /dev/fuse; missing: {m:?}"
        ));
        return;
    }
    // The ext4 drives need root for the loop device and the mount.
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let ext4_missing = missing(&["nbdfuse", "losetup", "mkfs.ext4"]);
    let drives = if root && ext4_missing.is_empty() {
        "tegula,cmr,dm"
    } else {
        skip(&format!(
            "paper zeafs's ext4 drives need root and nbdfuse, losetup, mkfs.ext4 (root: {root}, \
             missing: {ext4_missing:?}); running tegula fs only"
        ));
        "tegula"
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("zeafs");
    let plot: PathBuf = dir.path().join("plots/fig4.svg");
    let md = ok_out(&[
        "bench",
        "paper",
        "zeafs",
        "--num",
        "2000",
        "--capacity",
        "2GiB",
        "--drives",
        drives,
        "--dm-config",
        &config("seagate-5tb-data"),
        "--out",
        out.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
    ]);
    assert!(md.contains("| tegula fs on hm-smr |"), "{md}");
    let v = json(&out.join("figure4.json"));
    let runs = v.as_array().unwrap();
    let want = drives.split(',').count();
    if runs.len() < want {
        // A drive that could not be set up here (e.g. no loop device in a container) is named.
        skip(&format!(
            "paper zeafs ran {} of {want} drives: {}",
            runs.len(),
            md.lines()
                .filter(|l| l.starts_with("SKIPPED"))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    assert!(runs.iter().any(|r| r["name"] == "tegula fs on hm-smr"));
    for r in runs {
        assert_eq!(r["ops"], 6000, "{}", r["name"]);
        assert!(r["device_s"].as_f64().unwrap() > 0.0, "{}", r["name"]);
        assert!(
            r["busy_s"].as_f64().unwrap() <= r["device_s"].as_f64().unwrap() + 1e-9,
            "{}",
            r["name"]
        );
        let phases = r["phases"].as_array().unwrap();
        assert_eq!(phases.len(), 3);
        assert!(phases[0]["db_bench"]
            .as_str()
            .unwrap()
            .starts_with("fillrandom"));
        assert!(
            !r["windows"].as_array().unwrap().is_empty(),
            "{}",
            r["name"]
        );
    }
    assert_svg(&plot);
    assert!(out.join("figure4.md").exists());
}
