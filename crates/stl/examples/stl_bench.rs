//! Emulated 4 KiB random writes per wall second through the journal STL in metadata-only mode
//! (the 5 TB Seagate configuration), on an in-memory drive and on a drive image (whose
//! metadata log is appended to a file). Prints one JSON line per backing.
//!
//! `cargo run --release -p tegula-stl --example stl_bench [-- WRITES [CONFIG]]`

use rand::{Rng, SeedableRng};
use tegula_device::BlockDevice;
use tegula_stl::{DmConfig, DmDrive};

fn run(d: &DmDrive, n: u64, backing: &str) -> Result<(), Box<dyn std::error::Error>> {
    let cap = d.info().capacity_sectors;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let buf = vec![0u8; 4096];
    let t0 = d.now();
    let t = std::time::Instant::now();
    for _ in 0..n {
        d.write(rng.gen_range(0..cap), &buf)?;
    }
    let wall = t.elapsed().as_secs_f64();
    let modelled = (d.now() - t0) as f64 / 1e9;
    let s = d.stl_stats();
    println!(
        "{{\"bench\":\"stl_journal_randwrite_4k_metadata_only\",\"backing\":\"{backing}\",\"writes\":{n},\"wall_s\":{wall:.3},\"writes_per_wall_s\":{:.0},\"modelled_s\":{modelled:.1},\"modelled_iops\":{:.1},\"speedup_over_real_time\":{:.0},\"journal_entries\":{},\"map_entries\":{},\"map_merges\":{},\"bands_cleaned\":{}}}",
        n as f64 / wall,
        n as f64 / modelled,
        modelled / wall,
        s.journal_entries,
        s.map_entries,
        s.map_merges,
        s.bands_cleaned
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let path = std::env::args().nth(2).unwrap_or_else(|| {
        format!(
            "{}/../../configs/dm-smr/seagate-5tb.toml",
            env!("CARGO_MANIFEST_DIR")
        )
    });
    let cfg = DmConfig::from_toml(&std::fs::read_to_string(&path)?)?;
    run(&DmDrive::new(cfg.clone())?, n, "memory")?;
    let dir = std::env::temp_dir().join(format!("stl_bench_{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let img = dir.join("drive.img");
    let d = DmDrive::create_image(&img, cfg)?;
    run(&d, n, "image")?;
    d.close()?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
