//! The experiment's outputs: a result line per run, the markdown tables, the JSON and the
//! plots.

use super::{CleaningOptions, CleaningReport, CleaningRun, Trigger};
use crate::error::{Error, Result};
use crate::plot::{bars, rate_series, LineChart, Series};
use tegula_device::format_size;
use tegula_fs::{CleanPolicy, Placement};

const MB: f64 = 1e6;

/// A rate in MB/s, or `-`.
fn mb_s(r: Option<f64>) -> String {
    r.map_or_else(|| "-".to_string(), |r| format!("{:.2}", r / MB))
}

/// One run as a markdown table row (the columns of [`markdown`]).
pub(super) fn row(r: &CleaningRun) -> String {
    format!(
        "| {} | {} | {} | {} | {} | {} | {:.3} | {} | {} | {:.1} | {:.1} | {} | {:.2} | {} |",
        r.workload,
        r.placement,
        r.clean,
        r.trigger,
        format_size(r.user_bytes),
        format_size(r.moved_bytes),
        r.write_amplification,
        r.cleanings,
        r.tail_cleanings,
        r.device_secs,
        r.throughput_mb_s,
        r.enospc,
        r.measured_clean_rate / MB,
        mb_s(r.estimated_clean_rate),
    )
}

/// The markdown table of `runs`, with the settings they ran under.
pub fn markdown(opts: &CleaningOptions, runs: &[CleaningRun]) -> String {
    let mut s = format!(
        "Cleaning experiment: hm-smr drive of {} in {} zones, live data {:.0} % of the data \
         capacity, {} capacities written per run, trees of {}, think time {:.1} s, seed {}.\n\n",
        format_size(opts.capacity),
        format_size(opts.zone),
        opts.fill * 100.0,
        opts.volume,
        format_size(opts.tree_bytes),
        opts.think as f64 / 1e9,
        opts.seed,
    );
    s.push_str(
        "| workload | placement | clean | trigger | written | moved | WA | cleaned | tail | \
         device s | MB/s busy | ENOSPC | clean MB/s | est. MB/s |\n",
    );
    s.push_str("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for r in runs {
        s.push_str(&row(r));
        s.push('\n');
    }
    s.push_str(
        "\nWA = (written + moved) / written. MB/s busy: new data per device second outside \
         think time. clean MB/s: bytes the cleaner freed per device second of the run; est. \
         MB/s: the cleaning rate `tegula fs stats` estimates from the end state at the run's \
         write rate in device time.\n",
    );
    s
}

/// Writes the JSON, the markdown and the plots; returns the report.
pub(super) fn write(opts: &CleaningOptions, runs: Vec<CleaningRun>) -> Result<CleaningReport> {
    let out = &opts.out;
    let json = out.join("fs-cleaning.json");
    let doc = serde_json::json!({
        "capacity": opts.capacity,
        "zone": opts.zone,
        "fill": opts.fill,
        "volume": opts.volume,
        "tree_bytes": opts.tree_bytes,
        "think_ns": opts.think,
        "seed": opts.seed,
        "runs": runs,
    });
    let text = serde_json::to_string_pretty(&doc)
        .map_err(|e| Error::internal(format!("encoding the results: {e}")))?;
    std::fs::write(&json, text).map_err(|e| Error::io(format!("writing {}", json.display()), e))?;
    let md = markdown(opts, &runs);
    let md_path = out.join("fs-cleaning.md");
    std::fs::write(&md_path, &md)
        .map_err(|e| Error::io(format!("writing {}", md_path.display()), e))?;
    let mut plots = Vec::new();
    let mut workloads: Vec<_> = runs.iter().map(|r| r.workload).collect();
    workloads.dedup();
    for w in workloads {
        let of = |p: Placement, c: CleanPolicy| {
            runs.iter().find(|r| {
                r.workload == w
                    && r.placement == p.name()
                    && r.clean == c.name()
                    && r.trigger == Trigger::Thresholds
            })
        };
        let placements: Vec<Placement> = opts
            .placements
            .iter()
            .copied()
            .filter(|&p| opts.cleans.iter().any(|&c| of(p, c).is_some()))
            .collect();
        if !placements.is_empty() {
            let cats: Vec<String> = placements.iter().map(|p| p.name().to_string()).collect();
            let by_clean = |f: &dyn Fn(&CleaningRun) -> f64| -> Vec<(String, Vec<f64>)> {
                opts.cleans
                    .iter()
                    .map(|&c| {
                        (
                            format!("{c} cleaning"),
                            placements
                                .iter()
                                .map(|&p| of(p, c).map_or(0.0, f))
                                .collect(),
                        )
                    })
                    .collect()
            };
            let p = out.join(format!("fs-cleaning-{w}-wa.svg"));
            bars(
                &p,
                &format!(
                    "{w}: write amplification, thresholds trigger (live {:.0} %)",
                    opts.fill * 100.0
                ),
                "(written + moved) / written",
                &cats,
                &by_clean(&|r| r.write_amplification),
            )?;
            plots.push(p);
            let p = out.join(format!("fs-cleaning-{w}-moved.svg"));
            bars(
                &p,
                &format!("{w}: bytes moved by the cleaner, thresholds trigger"),
                "MiB moved",
                &cats,
                &by_clean(&|r| r.moved_bytes as f64 / (1u64 << 20) as f64),
            )?;
            plots.push(p);
        }
        // Throughput over device time: the runs of the trigger comparison (same policies).
        let trig: Vec<&CleaningRun> = runs.iter().filter(|r| r.workload == w).collect();
        let base = trig
            .iter()
            .find(|r| r.trigger != Trigger::Thresholds)
            .map(|r| (r.placement.clone(), r.clean.clone()));
        if let Some((bp, bc)) = base {
            let series: Vec<Series> = trig
                .iter()
                .filter(|r| r.placement == bp && r.clean == bc)
                .map(|r| {
                    let bucket = (r.device_secs / 60.0).max(0.05);
                    Series {
                        name: r.trigger.name().to_string(),
                        points: rate_series(&r.series, bucket)
                            .into_iter()
                            .map(|(t, v)| (t, v / MB))
                            .collect(),
                    }
                })
                .collect();
            let p = out.join(format!("fs-cleaning-{w}-throughput.svg"));
            LineChart::new(
                &format!("{w}: new data over device time by trigger ({bp}, {bc} cleaning)"),
                "device time (s)",
                "new data (MB per device s)",
            )
            .draw(&p, &series)?;
            plots.push(p);
        }
    }
    Ok(CleaningReport {
        runs,
        markdown: md,
        tables: vec![json, md_path],
        plots,
    })
}
