//! Dev harness: probe a built-in dm-smr profile or TOML config in memory.
//! `cargo run --release -p tegula-skylight --example scratch -- seagate-5tb 1,2,3`
use std::sync::Arc;
use tegula_device::BlockDevice;
use tegula_skylight::{probe, BlockTarget, Observer, ProbeOptions};
use tegula_stl::DmDrive;

struct Print(std::time::Instant);
impl Observer for Print {
    fn begin(&mut self, id: u8, name: &str, _t: u64) {
        eprintln!("[{:7.2}s] TEST {id} {name}", self.0.elapsed().as_secs_f64());
    }
    fn finish(&mut self, id: u8, v: &str) {
        eprintln!("[{:7.2}s] TEST {id}: {v}", self.0.elapsed().as_secs_f64());
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let name = std::env::args().nth(1).unwrap_or("seagate-5tb".into());
    let tests = std::env::args().nth(2).unwrap_or_default();
    let text = match tegula_stl::profiles::dm_profile_toml(&name) {
        Some(t) => t.to_string(),
        None => std::fs::read_to_string(&name)?,
    };
    let t2 = text.clone();
    let mut target = if tegula_stl::DmConfig::is_dm_smr_toml(&text) {
        let dev: Arc<dyn BlockDevice> = Arc::new(DmDrive::from_toml(&text)?);
        BlockTarget::new(&name, dev).with_fresh(Box::new(move || {
            let d: Arc<dyn BlockDevice> =
                Arc::new(DmDrive::from_toml(&t2).map_err(|e| e.to_string())?);
            Ok((d, None))
        }))
    } else {
        let cfg = tegula_device::DiskConfig::from_toml(&text)?;
        let dev: Arc<dyn BlockDevice> = Arc::new(tegula_device::Disk::in_memory(cfg)?);
        BlockTarget::new(&name, dev)
    };
    let opts = ProbeOptions {
        tests: tegula_skylight::parse_tests(&tests)?,
        ..Default::default()
    };
    let t = std::time::Instant::now();
    let p = probe::run(&mut target, &opts, &mut Print(t))?;
    println!("{}", p.report.table());
    eprintln!("wall {:.2}s", t.elapsed().as_secs_f64());
    if let Some(dir) = std::env::args().nth(3) {
        tegula_skylight::plot::write_all(&p.plots, std::path::Path::new(&dir))?;
    }
    Ok(())
}
