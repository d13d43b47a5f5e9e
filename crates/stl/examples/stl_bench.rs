//! Emulated 4 KiB random writes per wall second through the journal STL in metadata-only mode
//! (the 5 TB Seagate configuration). Prints one JSON line.
//!
//! `cargo run --release -p tegula-stl --example stl_bench [-- WRITES [CONFIG]]`

use rand::{Rng, SeedableRng};
use stl::DmDrive;
use tegula_device::BlockDevice;

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
    let d = DmDrive::from_toml(&std::fs::read_to_string(&path)?)?;
    let cap = d.info().capacity_sectors;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let buf = vec![0u8; 4096];
    let t = std::time::Instant::now();
    for _ in 0..n {
        d.write(rng.gen_range(0..cap), &buf)?;
    }
    let wall = t.elapsed().as_secs_f64();
    let s = d.stl_stats();
    println!(
        "{{\"bench\":\"stl_journal_randwrite_4k_metadata_only\",\"writes\":{n},\"wall_s\":{wall:.3},\"writes_per_wall_s\":{:.0},\"modelled_s\":{:.1},\"modelled_iops\":{:.1},\"map_merges\":{},\"bands_cleaned\":{}}}",
        n as f64 / wall,
        d.now() as f64 / 1e9,
        n as f64 / (d.now() as f64 / 1e9),
        s.map_merges,
        s.bands_cleaned
    );
    Ok(())
}
