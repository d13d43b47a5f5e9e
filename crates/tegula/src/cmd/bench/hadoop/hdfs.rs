//! `tegula bench hadoop hdfs --datanodes N`: HDFS over several emulated drives, each behind
//! its own `tegula fs mount`, with a datanode's drive lost mid-run.

use super::*;

pub(super) struct Drive {
    pub(super) image: PathBuf,
    pub(super) mnt: PathBuf,
    pub(super) mount: Option<Mount>,
    pub(super) killed: bool,
}

/// Runs `tegula bench hadoop hdfs`; the JSON document it writes.
pub fn hdfs(a: &HdfsArgs) -> Result<Value> {
    if a.datanodes == 0 {
        bail!("--datanodes must be at least 1");
    }
    let kill: Option<usize> = match a.kill.as_str() {
        "none" => None,
        k => Some(k.parse().context("--kill: a DataNode index or none")?),
    };
    if kill.is_some_and(|k| k >= a.datanodes) {
        bail!("--kill {} but only {} DataNodes", a.kill, a.datanodes);
    }
    std::fs::create_dir_all(&a.out)?;
    let out = a.out.canonicalize()?;
    println!(
        "HDFS: {} DataNodes, each on its own {} drive of {} under tegula fs; {} rows, replication {}",
        a.datanodes, a.profile, a.capacity, a.rows, a.replication
    );
    let mut drives = Vec::new();
    for i in 0..a.datanodes {
        let image = out.join(format!("drive{i}.img"));
        let mnt = out.join(format!("mnt{i}"));
        let _ = std::fs::remove_file(&image);
        std::fs::create_dir_all(&mnt)?;
        let img = image.to_string_lossy().into_owned();
        tegula_cmd(&[
            "disk",
            "create",
            "--profile",
            &a.profile,
            "--capacity",
            &a.capacity.0.to_string(),
            &img,
        ])?;
        tegula_cmd(&["fs", "mkfs", &img])?;
        let log = out.join(format!("mount{i}.log"));
        tegula_cmd(&[
            "fs",
            "mount",
            &img,
            &mnt.to_string_lossy(),
            "--log",
            &log.to_string_lossy(),
        ])?;
        let mount = Mount::find(&mnt)?.context("mount not found after mounting")?;
        drives.push(Drive {
            image,
            mnt,
            mount: Some(mount),
            killed: false,
        });
    }
    let result = hdfs_run(a, &out, &mut drives, kill);
    // Whatever happened: unmount what is still mounted.
    for d in &mut drives {
        if let Some(m) = d.mount.take() {
            if let Err(e) = m.unmount() {
                eprintln!("unmounting {}: {e:#}", d.mnt.display());
            }
        }
    }
    let (mut doc, log) = result?;
    // Per-drive figures over the whole run, from the unmounted images.
    let mut per = Vec::new();
    for (i, d) in drives.iter().enumerate() {
        let img = d.image.to_string_lossy().into_owned();
        let s = drive_snapshot(&d.image);
        let check = Command::new(tegula()?)
            .args(["fs", "check", "--quick", &img])
            .output()?;
        let mut row = match s {
            Ok(s) => {
                let wall = doc["total_s"].as_f64().unwrap_or(0.0);
                drive_delta(&json!({}), &s, wall)
            }
            Err(e) => json!({"error": format!("{e:#}")}),
        };
        row["datanode"] = json!(i);
        row["killed"] = json!(d.killed);
        row["check_ok"] = json!(check.status.success());
        if !check.status.success() {
            row["check"] = json!(String::from_utf8_lossy(&check.stdout)
                .lines()
                .take(5)
                .collect::<Vec<_>>());
        }
        per.push(row);
    }
    doc["drives"] = json!(per);
    print_hdfs(&doc);
    write_json(a.json.as_ref(), &doc)?;
    let healthy_checks = per
        .iter()
        .all(|r| r["killed"] == json!(true) || r["check_ok"] == json!(true));
    if doc["valid"] != json!(true) || !healthy_checks {
        bail!(
            "the HDFS run failed (TeraValidate, failover or fs check): see {}",
            log.display()
        );
    }
    if !a.keep {
        for d in &drives {
            let _ = std::fs::remove_file(&d.image);
            let _ = std::fs::remove_dir(&d.mnt);
        }
        let _ = std::fs::remove_dir_all(out.join("work"));
    }
    Ok(doc)
}

pub(super) fn hdfs_run(
    a: &HdfsArgs,
    out: &Path,
    drives: &mut [Drive],
    kill: Option<usize>,
) -> Result<(Value, PathBuf)> {
    let dirs: Vec<String> = drives
        .iter()
        .map(|d| d.mnt.join("dn").to_string_lossy().into_owned())
        .collect();
    let work = out.join("work");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let log = a
        .java
        .java_log
        .clone()
        .unwrap_or_else(|| out.join("hadoop.log"));
    let drv_args = vec![
        "hdfs".to_string(),
        "--data-dirs".into(),
        dirs.join(","),
        "--work".into(),
        work.to_string_lossy().into_owned(),
        "--rows".into(),
        a.rows.to_string(),
        "--replication".into(),
        a.replication.to_string(),
        "--block-size".into(),
        a.block_size.0.to_string(),
        "--maps".into(),
        a.java.maps.to_string(),
        "--reduces".into(),
        a.java.reduces.to_string(),
    ];
    let mut drv = Driver::start(&a.java, &drv_args, &log, &work.join("jvm-tmp"))?;
    let mut result = Value::Null;
    let mut phase_calls: Vec<Value> = Vec::new();
    // The drive loss: a timer during TeraSort kills drive k's mount process.
    let killed_at: Arc<Mutex<Option<f64>>> = Arc::new(Mutex::new(None));
    let mut timer: Option<std::thread::JoinHandle<()>> = None;
    let t_run = Instant::now();
    let mut t_terasort = Instant::now();
    while let Some(ev) = drv.next()? {
        match ev {
            Event::Start(p) => {
                for d in drives.iter() {
                    if let Some(m) = &d.mount {
                        m.profile()?;
                    }
                }
                if p == "terasort" {
                    t_terasort = Instant::now();
                    if let Some(k) = kill {
                        if let Some(m) = drives[k].mount.clone() {
                            let after = a.kill_after;
                            let at = killed_at.clone();
                            timer = Some(std::thread::spawn(move || {
                                std::thread::sleep(Duration::from_secs_f64(after));
                                if let Ok(mut g) = at.lock() {
                                    if g.is_none() {
                                        lose_drive(&m);
                                        *g = Some(after);
                                    }
                                }
                            }));
                        }
                    }
                }
                drv.answer("go")?;
            }
            Event::End(p) => {
                let mut per = Vec::new();
                for (i, d) in drives.iter().enumerate() {
                    let gone =
                        killed_at.lock().map(|g| g.is_some()).unwrap_or(false) && kill == Some(i);
                    match &d.mount {
                        Some(m) if !gone => {
                            let (total, ops, wbytes) = calls(&m.profile()?);
                            per.push(json!({"datanode": i, "total_calls": total, "calls": ops, "fs_write_bytes": wbytes}));
                        }
                        _ => per.push(json!({"datanode": i, "gone": true})),
                    }
                }
                phase_calls.push(json!({"phase": p, "drives": per}));
                let mut answer = "go".to_string();
                if p == "terasort" {
                    if let Some(k) = kill {
                        // If TeraSort ended before the timer fired, the drive goes now.
                        let mut g = killed_at.lock().map_err(|_| anyhow::anyhow!("lock"))?;
                        if g.is_none() {
                            if let Some(m) = &drives[k].mount {
                                lose_drive(m);
                            }
                            *g = Some(t_terasort.elapsed().as_secs_f64());
                        }
                        drop(g);
                        if let Some(t) = timer.take() {
                            let _ = t.join();
                        }
                        drives[k].mount = None;
                        drives[k].killed = true;
                        answer = format!("datanode-gone {k}");
                    }
                }
                drv.answer(&answer)?;
            }
            Event::Result(r) => result = r,
        }
    }
    if let Some(t) = timer.take() {
        let _ = t.join();
    }
    drv.finish(&log)?;
    let mut doc = result;
    doc["bench"] = json!("hadoop hdfs");
    doc["profile"] = json!(a.profile);
    doc["capacity"] = json!(a.capacity.0);
    doc["wall_outer_s"] = json!(t_run.elapsed().as_secs_f64());
    doc["calls_per_phase"] = json!(phase_calls);
    if let Some(k) = kill {
        let at = killed_at.lock().ok().and_then(|g| *g);
        doc["drive_lost"] = json!({"datanode": k, "seconds_into_terasort": at, "how": "mount process killed (SIGKILL), mount detached"});
    }
    Ok((doc, log))
}

/// Takes a drive away under its DataNode: the mount process dies at once (SIGKILL, as if the
/// drive or its host process were gone) and the dead mount is detached.
pub(super) fn lose_drive(m: &Mount) {
    // SAFETY: kill with a valid signal; the pid is the mount process we found.
    unsafe {
        libc::kill(m.pid as libc::pid_t, libc::SIGKILL);
    }
    let _ = Command::new("fusermount3")
        .arg("-uz")
        .arg(&m.mountpoint)
        .status();
    eprintln!(
        "drive lost: killed mount process {} of {}",
        m.pid,
        m.mountpoint.display()
    );
}

pub(super) fn print_hdfs(doc: &Value) {
    println!("{:<13} {:>8} {:>6}", "phase", "wall s", "valid");
    for p in doc["phases"].as_array().into_iter().flatten() {
        println!(
            "{:<13} {:>8.2} {:>6}",
            p["phase"].as_str().unwrap_or("?"),
            p["wall_s"].as_f64().unwrap_or(0.0),
            p["valid"]
        );
        if let Some(f) = p.get("failover") {
            println!("  drive lost: {f}");
        }
    }
    println!(
        "{:<9} {:>12} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7}",
        "datanode",
        "written MiB",
        "device s",
        "live MiB",
        "dead MiB",
        "moved MiB",
        "killed",
        "check"
    );
    for d in doc["drives"].as_array().into_iter().flatten() {
        println!(
            "{:<9} {:>12} {:>9.2} {:>9} {:>9} {:>9} {:>7} {:>7}",
            d["datanode"],
            mib(d["bytes_written"].as_f64().unwrap_or(0.0)),
            d["device_s"].as_f64().unwrap_or(0.0),
            mib(d["live"].as_f64().unwrap_or(0.0)),
            mib(d["dead"].as_f64().unwrap_or(0.0)),
            mib(d["moved"].as_f64().unwrap_or(0.0)),
            d["killed"],
            if d["check_ok"] == json!(true) {
                "ok"
            } else {
                "FAIL"
            }
        );
    }
}
