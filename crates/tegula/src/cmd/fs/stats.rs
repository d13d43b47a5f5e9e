//! `tegula fs stats`: live and dead bytes per zone (ShingledFS's edistats) and the metadata
//! log's fill.

use std::path::Path;
use tegula_device::format_size;

pub fn run(image: &Path, json: bool) -> anyhow::Result<()> {
    let fs = super::open_fs(image, true)?;
    let zs = fs.zone_stats();
    let m = fs.meta_stats();
    let s = fs.statfs();
    let (used, live, dead, free) = zs.iter().fold((0, 0, 0, 0), |a, z| {
        (a.0 + z.used, a.1 + z.live, a.2 + z.dead, a.3 + z.free)
    });
    if json {
        let zones: Vec<serde_json::Value> = zs
            .iter()
            .map(|z| {
                serde_json::json!({
                    "zone": z.zone, "role": z.role, "used": z.used, "live": z.live,
                    "dead": z.dead, "free": z.free,
                })
            })
            .collect();
        let v = serde_json::json!({
            "image": image.display().to_string(),
            "zones": zones,
            "total": {"used": used, "live": live, "dead": dead, "free": free},
            "statfs": {"block_size": s.block_size, "blocks": s.blocks, "free_blocks": s.free_blocks, "files": s.files},
            "meta": {"generation": m.generation, "log_used_sectors": m.log_used, "log_sectors": m.log_sectors, "inodes": m.inodes},
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "{:>5} {:>6} {:>12} {:>12} {:>12} {:>12}",
        "zone", "role", "used", "live", "dead", "free"
    );
    for z in zs.iter().filter(|z| z.used > 0 || z.role != "empty") {
        println!(
            "{:>5} {:>6} {:>12} {:>12} {:>12} {:>12}",
            z.zone, z.role, z.used, z.live, z.dead, z.free
        );
    }
    let empty = zs.iter().filter(|z| z.role == "empty").count();
    println!(
        "total: used {}, live {}, dead {}, free {} ({} empty zones); {} inodes; log {}/{} sectors since checkpoint {}",
        format_size(used),
        format_size(live),
        format_size(dead),
        format_size(free),
        empty,
        m.inodes,
        m.log_used,
        m.log_sectors,
        m.generation
    );
    Ok(())
}
