//! The house drawn in docs/ARCHITECTURE.md is the house `cargo metadata` sees: every crate of
//! the workspace has its row (name and folder), no row names a crate that is gone, and no
//! product crate stands on a benchmark crate (only the binary depends on `tegula-bench`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// (crate name → (folder relative to the workspace, names of its workspace dependencies)).
fn workspace() -> BTreeMap<String, (String, Vec<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(&root)
        .output()
        .expect("running cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
    let root = std::fs::canonicalize(&root).expect("workspace root");
    let mut crates = BTreeMap::new();
    for p in v["packages"].as_array().expect("packages") {
        let name = p["name"].as_str().expect("name").to_string();
        let manifest = Path::new(p["manifest_path"].as_str().expect("manifest_path"));
        let dir = manifest
            .parent()
            .and_then(|d| d.strip_prefix(&root).ok())
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        let deps = p["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].is_null())
            .filter_map(|d| d["name"].as_str())
            .filter(|n| n.starts_with("tegula"))
            .map(str::to_string)
            .collect();
        crates.insert(name, (dir, deps));
    }
    crates
}

/// The rows of ARCHITECTURE.md's crate table: (crate, folder).
fn documented() -> Vec<(String, String)> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ARCHITECTURE.md");
    let text = std::fs::read_to_string(doc).expect("reading docs/ARCHITECTURE.md");
    text.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let name = cells.get(1)?.strip_prefix("`tegula")?.strip_suffix('`')?;
            let dir = cells.get(2)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((format!("tegula{name}"), dir.to_string()))
        })
        .collect()
}

#[test]
fn every_crate_has_its_row_and_every_row_a_crate() {
    let crates = workspace();
    let rows = documented();
    for (name, (dir, _)) in &crates {
        if name.starts_with("tegula") {
            assert!(
                rows.iter().any(|(n, d)| n == name && d == dir),
                "docs/ARCHITECTURE.md has no row for {name} in {dir}"
            );
        }
    }
    for (name, dir) in &rows {
        assert!(
            crates.get(name).is_some_and(|(d, _)| d == dir),
            "docs/ARCHITECTURE.md names {name} in {dir}, which cargo metadata does not know"
        );
    }
}

#[test]
fn no_product_crate_stands_on_the_benchmarks() {
    for (name, (_, deps)) in workspace() {
        if name != "tegula" && name != "tegula-bench" {
            assert!(
                !deps.iter().any(|d| d == "tegula-bench"),
                "{name} depends on tegula-bench: a product crate must not stand on a benchmark"
            );
        }
    }
}

#[test]
fn the_one_device_opener_sits_under_the_binary_and_the_engines() {
    let ws = workspace();
    let (_, open) = &ws["tegula-open"];
    for d in open {
        assert!(
            [
                "tegula-codec",
                "tegula-device",
                "tegula-stl",
                "tegula-dmimr",
                // The KVIMR store of an interlaced image (under dm-imr already).
                "tegula-kvimr"
            ]
            .contains(&d.as_str()),
            "tegula-open depends on {d}: the opener stands on the devices only"
        );
    }
    for user in ["tegula", "tegula-kv"] {
        assert!(
            ws[user].1.iter().any(|d| d == "tegula-open"),
            "{user} does not open its devices through tegula-open"
        );
    }
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("reading a source folder") {
        let p = e.expect("a folder entry").path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Issue 35: product code turns a path into a device only through `tegula_open` (the device
/// layer's constructors are called there); tests may build devices directly.
#[test]
fn only_the_opener_opens_devices_from_paths() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for c in std::fs::read_dir(&crates).expect("reading crates/") {
        let c = c.expect("a crate folder").path();
        let name = c.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name != "device" && name != "open" && c.join("src").is_dir() {
            sources(&c.join("src"), &mut files);
        }
    }
    assert!(!files.is_empty());
    for f in files {
        let text = std::fs::read_to_string(&f).expect("reading a source file");
        // Product code is what comes before the file's test module.
        let product = text.split("#[cfg(test)]").next().unwrap_or_default();
        for call in [
            "Disk::open_image(",
            "HostBanded::open(",
            "ZoneFiles::open(",
            "Zbd::open(",
        ] {
            assert!(
                !product.contains(call),
                "{} calls {call}: open devices from paths through tegula_open",
                f.display()
            );
        }
    }
}
