//! Prints the QD1 random-write latency signature of a configured drive (a quick look, not a test).
use rand::{Rng, SeedableRng};
use tegula_device::{BlockDevice, MS};
use tegula_stl::DmDrive;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or("configs/dm-smr/seagate-5tb.toml".into());
    let n: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(500);
    let t = std::time::Instant::now();
    let d = DmDrive::from_toml(&std::fs::read_to_string(&path)?)?;
    eprintln!("built in {:?}: {:?}", t.elapsed(), d.info());
    let cap = d.info().capacity_sectors;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let buf = vec![0u8; 4096];
    let t = std::time::Instant::now();
    let mut lat = Vec::new();
    for _ in 0..n {
        let lba = rng.gen_range(0..cap);
        lat.push(d.write(lba, &buf)?.service());
    }
    let el = t.elapsed();
    for (i, l) in lat.iter().enumerate().take(12) {
        println!("write {i}: {:.2} ms", *l as f64 / MS as f64);
    }
    let big: Vec<_> = lat
        .iter()
        .enumerate()
        .filter(|(_, &l)| l > 100 * MS)
        .map(|(i, l)| (i, *l as f64 / 1e6))
        .collect();
    println!("slow writes: {big:?}");
    println!(
        "{n} writes in {el:?}: {:.0}/s wall",
        n as f64 / el.as_secs_f64()
    );
    println!("{}", serde_json::to_string_pretty(&d.stl_stats())?);
    Ok(())
}
