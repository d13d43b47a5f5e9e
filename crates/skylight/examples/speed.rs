use rand::{Rng, SeedableRng};
use tegula_device::media::Request;
use tegula_device::{BlockDevice, MS};
use tegula_stl::DmDrive;
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let name = std::env::args().nth(1).unwrap_or("seagate-5tb".into());
    let mode = std::env::args().nth(2).unwrap_or("qd1".into());
    let n: usize = std::env::args().nth(3).and_then(|s| s.parse().ok()).unwrap_or(20000);
    let size: usize = std::env::args().nth(4).and_then(|s| s.parse().ok()).unwrap_or(4096);
    let text = tegula_stl::profiles::dm_profile_toml(&name).map(|s| s.to_string()).unwrap_or_else(|| std::fs::read_to_string(&name).unwrap());
    if std::env::var("MMAP").is_ok() { unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024); } }
    if std::env::var("TRIM").is_ok() { unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, 256 * 1024); libc::mallopt(libc::M_TOP_PAD, 0); } }
    let d = DmDrive::from_toml(&text)?;
    let cap = d.info().capacity_sectors;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let buf = vec![0u8; size];
    let t = std::time::Instant::now();
    let mut lat = Vec::new();
    let spb = (size / 4096) as u64;
    match mode.as_str() {
        "qd1" => for _ in 0..n { lat.push(d.write(rng.gen_range(0..cap - spb), &buf)?.service()); },
        "qd31" => for _ in 0..n / 31 {
            let reqs = (0..31).map(|_| Request::Write { lba: rng.gen_range(0..cap - spb), data: vec![0u8; size], fua: true }).collect();
            for r in d.submit(reqs) { lat.push(r?.done.service()); }
        },
        "seqread" => { let mut b = vec![0u8; size]; let mut l = 0; for _ in 0..n { lat.push(d.read(l, &mut b)?.service()); l += spb; if l + spb > cap { break; } } },
        _ => {}
    }
    let el = t.elapsed();
    let first_slow = lat.iter().position(|&l| l > 400*MS);
    println!("{} ops in {:?} ({:.2} us/op); first slow {:?}", lat.len(), el, el.as_secs_f64()*1e6/lat.len() as f64, first_slow);
    println!("{}", serde_json::to_string(&d.stl_stats())?);
    Ok(())
}
