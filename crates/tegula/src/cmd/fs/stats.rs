//! `tegula fs stats`: live and dead bytes per zone with the sizes of their append and delete
//! logs (ShingledFS's edistats), the metadata log's fill, and the cleaning cost estimate
//! (ShingledFS §8.1).

use std::path::Path;
use tegula_device::format_size;

/// The fill level of the estimate (the paper's 70 %).
const FILL: f64 = 0.7;

fn opt(v: Option<f64>) -> serde_json::Value {
    v.map_or(serde_json::Value::Null, |x| serde_json::json!(x))
}

/// Runs `tegula fs stats`; `write_rate` (bytes per second) replaces the observed average in
/// the cleaning estimate.
pub fn run(image: &Path, json: bool, write_rate: Option<u64>) -> anyhow::Result<()> {
    if write_rate == Some(0) {
        anyhow::bail!("--write-rate must be more than 0");
    }
    let fs = super::open_fs(image, true)?;
    let zs = fs.zone_stats();
    let m = fs.meta_stats();
    let s = fs.statfs();
    let observed = fs.gc_estimate(FILL);
    let g = match write_rate {
        Some(r) => observed.at_write_rate(r as f64),
        None => observed,
    };
    let rate_source = if write_rate.is_some() {
        "given"
    } else {
        "observed"
    };
    let (used, live, dead, free) = zs.iter().fold((0, 0, 0, 0), |a, z| {
        (a.0 + z.used, a.1 + z.live, a.2 + z.dead, a.3 + z.free)
    });
    if json {
        let zones: Vec<serde_json::Value> = zs
            .iter()
            .map(|z| {
                serde_json::json!({
                    "zone": z.zone, "role": z.role, "used": z.used, "live": z.live,
                    "dead": z.dead, "free": z.free, "append_records": z.appends,
                    "delete_records": z.deletes, "appended": z.appended, "deleted": z.deleted,
                })
            })
            .collect();
        let v = serde_json::json!({
            "image": image.display().to_string(),
            "placement": fs.placement().name(),
            "zones": zones,
            "total": {"used": used, "live": live, "dead": dead, "free": free},
            "statfs": {"block_size": s.block_size, "blocks": s.blocks, "free_blocks": s.free_blocks, "files": s.files},
            "meta": {"generation": m.generation, "log_used_sectors": m.log_used, "log_sectors": m.log_sectors, "inodes": m.inodes},
            "gc_estimate": {
                "space_overhead": g.space_overhead, "dead_fraction": g.dead_fraction,
                "written": g.written, "moved": g.moved, "deleted": g.deleted,
                "write_amplification": g.write_amplification, "span_secs": g.span_secs,
                "write_rate": opt(g.write_rate), "write_rate_source": rate_source,
                "observed_write_rate": opt(observed.write_rate),
                "fill": g.fill, "capacity": g.capacity,
                "time_to_fill_secs": opt(g.time_to_fill_secs),
                "dead_at_capacity": g.dead_at_capacity, "clean_rate": opt(g.clean_rate),
            },
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "{:>5} {:>10} {:>12} {:>12} {:>12} {:>12} {:>8} {:>8}",
        "zone", "role", "used", "live", "dead", "free", "appends", "deletes"
    );
    for z in zs.iter().filter(|z| z.used > 0 || z.role != "empty") {
        println!(
            "{:>5} {:>10} {:>12} {:>12} {:>12} {:>12} {:>8} {:>8}",
            z.zone, z.role, z.used, z.live, z.dead, z.free, z.appends, z.deletes
        );
    }
    let empty = zs.iter().filter(|z| z.role == "empty").count();
    println!(
        "total: used {}, live {}, dead {}, free {} ({} empty zones); {} inodes; log {}/{} sectors since checkpoint {}; placement {}",
        format_size(used),
        format_size(live),
        format_size(dead),
        format_size(free),
        empty,
        m.inodes,
        m.log_used,
        m.log_sectors,
        m.generation,
        fs.placement()
    );
    println!(
        "cleaning estimate: space overhead {:.2} ((live + dead) / live), dead fraction {:.3}; {} written since mkfs, {} moved by the cleaner (write amplification {:.2}), {} died",
        g.space_overhead,
        g.dead_fraction,
        format_size(g.written),
        format_size(g.moved),
        g.write_amplification,
        format_size(g.deleted)
    );
    match (g.write_rate, g.time_to_fill_secs, g.clean_rate) {
        (Some(r), Some(t), Some(c)) => println!(
            "  at the {rate_source} write rate of {}/s (observed: {} over {:.1} s since mkfs), {:.0}% of the capacity fills in {:.0} s; a full drive would hold {} dead, so the cleaner must reclaim {}/s",
            format_size(r as u64),
            observed
                .write_rate
                .map_or("none".to_string(), |o| format!("{}/s", format_size(o as u64))),
            g.span_secs,
            g.fill * 100.0,
            t,
            format_size(g.dead_at_capacity as u64),
            format_size(c as u64)
        ),
        _ => println!("  no write rate yet (new data written at a single instant or never)"),
    }
    Ok(())
}
