//! `tegula bench hadoop terasort --on DIR`: TeraGen, TeraSort and TeraValidate on a directory.

use super::*;

/// Fills the file system under `dir` to `fraction` of its size with `dir/ballast`.
pub(super) fn fill(dir: &Path, fraction: f64) -> Result<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())?;
    // SAFETY: statvfs on a valid C string into a zeroed struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        bail!(
            "statvfs {}: {}",
            dir.display(),
            std::io::Error::last_os_error()
        );
    }
    let total = st.f_blocks as f64 * st.f_frsize as f64;
    let free = st.f_bavail as f64 * st.f_frsize as f64;
    let want = (fraction * total - (total - free)).max(0.0) as u64;
    let mut f = std::fs::File::create(dir.join("ballast"))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut left = want;
    while left > 0 {
        for chunk in buf.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
        }
        let n = left.min(buf.len() as u64) as usize;
        f.write_all(&buf[..n])?;
        left -= n as u64;
    }
    f.sync_all()?;
    Ok(want)
}

/// Runs `tegula bench hadoop terasort`; the JSON document it writes.
pub fn terasort(a: &TerasortArgs) -> Result<Value> {
    let on =
        a.on.canonicalize()
            .with_context(|| format!("--on {}", a.on.display()))?;
    let mut mount = Mount::find(&on)?;
    let kind = match &mount {
        Some(m) if m.image.is_some() => "tegula",
        Some(_) => "passthrough",
        None => "dir",
    };
    println!(
        "Hadoop TeraGen/TeraSort x{}/TeraValidate, {} rows, on {} ({kind})",
        a.repeat,
        a.rows,
        on.display()
    );
    let ballast = match a.fill {
        Some(f) => {
            let n = fill(&on, f)?;
            println!("ballast: {} MiB to fill {:.0}%", mib(n as f64), f * 100.0);
            Some(n)
        }
        None => None,
    };
    // Counters before the first phase.
    let mut snap = None;
    if let Some(m) = &mount {
        if let Some(img) = &m.image {
            m.unmount()?;
            snap = Some(drive_snapshot(img)?);
            mount = Some(m.remount()?);
        }
    }
    let work = on.join("tegula-hadoop");
    std::fs::create_dir_all(&work)?;
    let log = log_path(&a.java, a.json.as_ref(), "terasort");
    let drv_args = vec![
        "local".to_string(),
        "--dir".into(),
        work.to_string_lossy().into_owned(),
        "--rows".into(),
        a.rows.to_string(),
        "--maps".into(),
        a.java.maps.to_string(),
        "--reduces".into(),
        a.java.reduces.to_string(),
        "--repeat".into(),
        a.repeat.to_string(),
    ];
    // The JVM's own temporary files stay off the mount (it is unmounted between phases).
    let jvm_tmp = log
        .parent()
        .unwrap_or(Path::new("."))
        .join(format!("tegula-hadoop-jvm-{}", std::process::id()));
    let mut drv = Driver::start(&a.java, &drv_args, &log, &jvm_tmp)?;
    let mut rows: Vec<Value> = Vec::new();
    let mut result = Value::Null;
    let mut phase_start = Instant::now();
    let mut last: Option<(usize, f64)> = None;
    while let Some(ev) = drv.next()? {
        match ev {
            Event::Start(_) => {
                if kind == "passthrough" {
                    if let Some(m) = &mount {
                        m.profile()?; // reset the counters
                    }
                }
                phase_start = Instant::now();
                drv.answer("go")?;
            }
            Event::End(p) => {
                let wall = phase_start.elapsed().as_secs_f64();
                let mut row = json!({"phase": p, "wall_outer_s": wall});
                if let Some(m) = mount.take() {
                    let (total, ops, wbytes) = calls(&m.profile()?);
                    row["total_calls"] = json!(total);
                    row["calls"] = Value::Object(ops);
                    row["fs_write_bytes"] = json!(wbytes);
                    if m.image.is_some() && p == "teravalidate" {
                        // The last phase: its drive figures are read once the driver has
                        // exited (the local runner may still hold files of the job there).
                        last = Some((rows.len(), wall));
                        mount = Some(m);
                    } else if let Some(img) = &m.image {
                        m.unmount()?;
                        let s = drive_snapshot(img)?;
                        let prev = snap.take().unwrap_or(Value::Null);
                        let d = drive_delta(&prev, &s, wall);
                        row["drive"] = d;
                        snap = Some(s);
                        mount = Some(m.remount()?);
                    } else {
                        mount = Some(m);
                    }
                }
                rows.push(row);
                drv.answer("go")?;
            }
            Event::Result(r) => result = r,
        }
    }
    drv.finish(&log)?;
    if let (Some((i, wall)), Some(m)) = (last, mount.take()) {
        if let Some(img) = &m.image {
            m.unmount()?;
            let s = drive_snapshot(img)?;
            let prev = snap.take().unwrap_or(Value::Null);
            rows[i]["drive"] = drive_delta(&prev, &s, wall);
            mount = Some(m.remount()?);
        }
    }
    drop(mount);
    let _ = std::fs::remove_dir_all(&jvm_tmp);
    if ballast.is_some() {
        std::fs::remove_file(on.join("ballast"))?;
    }
    let _ = std::fs::remove_dir_all(&work);

    // Merge the driver's per-phase figures (wall, validity, /proc/self/io) with ours.
    let jphases = result["phases"].as_array().cloned().unwrap_or_default();
    let mut phases = Vec::new();
    for (i, row) in rows.into_iter().enumerate() {
        let mut p = jphases.get(i).cloned().unwrap_or(json!({}));
        let obj = p.as_object_mut().context("phase object")?;
        if let Some(r) = row.as_object() {
            for (k, v) in r {
                obj.entry(k.clone()).or_insert(v.clone());
            }
        }
        let dev = obj.get("drive").map(|d| d["device_s"].clone());
        obj.insert("device_s".into(), dev.unwrap_or(Value::Null));
        let bytes = match kind {
            "tegula" => obj["drive"]["bytes_written"].clone(),
            "passthrough" => obj["fs_write_bytes"].clone(),
            // The JVM's write() bytes (/proc/self/io wchar): the local runner's tasks run in it.
            _ => obj.get("proc_wchar").cloned().unwrap_or(Value::Null),
        };
        obj.insert("bytes_written".into(), bytes);
        phases.push(p);
    }
    let doc = json!({
        "bench": "hadoop terasort",
        "on": on,
        "kind": kind,
        "rows": a.rows,
        "repeat": a.repeat,
        "ballast_bytes": ballast,
        "valid": result["valid"],
        "hadoop_version": result["hadoop_version"],
        "phases": phases,
    });
    print_terasort(&doc);
    write_json(a.json.as_ref(), &doc)?;
    if doc["valid"] != json!(true) {
        bail!("TeraValidate (or a job) failed: see {}", log.display());
    }
    Ok(doc)
}

pub(super) fn print_terasort(doc: &Value) {
    println!(
        "{:<13} {:>8} {:>9} {:>12} {:>9} {:>8} {:>13} {:>10} {:>6}  calls",
        "phase",
        "wall s",
        "device s",
        "written MiB",
        "moved MiB",
        "usage",
        "reclaim MiB/s",
        "need MiB/s",
        "valid"
    );
    for p in doc["phases"].as_array().into_iter().flatten() {
        let dev = p["device_s"]
            .as_f64()
            .map_or("-".to_string(), |d| format!("{d:.2}"));
        let written = p["bytes_written"].as_f64().map_or("-".to_string(), mib);
        let moved = p["drive"]["moved"].as_f64().map_or("-".to_string(), mib);
        let usage = p["drive"]["usage"]
            .as_f64()
            .map_or("-".to_string(), |u| format!("{:.0}%", u * 100.0));
        let calls = p["total_calls"]
            .as_u64()
            .map_or("-".to_string(), |c| c.to_string());
        let rate = |k: &str| {
            p["drive"][k].as_f64().map_or("-".to_string(), |r| {
                format!("{:.2}", r / (1u64 << 20) as f64)
            })
        };
        println!(
            "{:<13} {:>8.2} {:>9} {:>12} {:>9} {:>8} {:>13} {:>10} {:>6}  {}",
            p["phase"].as_str().unwrap_or("?"),
            p["wall_s"].as_f64().unwrap_or(0.0),
            dev,
            written,
            moved,
            usage,
            rate("clean_rate_measured"),
            rate("clean_rate_estimate_phase"),
            p["valid"],
            calls
        );
    }
}
