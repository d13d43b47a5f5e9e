//! The `tegula fs mount` processes under a Hadoop run: unmounting and mounting them again
//! the same way, and reading the drive's counters and the file system's state between phases.

use super::*;

/// A `tegula fs mount` process serving a mount point: enough to unmount it and mount it again
/// the same way.
#[derive(Debug, Clone)]
pub(super) struct Mount {
    pub(super) mountpoint: PathBuf,
    pub(super) pid: u32,
    pub(super) exe: PathBuf,
    pub(super) args: Vec<String>,
    pub(super) cwd: PathBuf,
    /// The image (None for a pass-through mount).
    pub(super) image: Option<PathBuf>,
}

impl Mount {
    /// The mount serving `mp`, if it is a live tegula fs mount.
    pub(super) fn find(mp: &Path) -> Result<Option<Mount>> {
        let mp = mp.canonicalize()?;
        let Ok(text) = std::fs::read(registry(&mp)) else {
            return Ok(None);
        };
        let pid = serde_json::from_slice::<Entry>(&text)?.pid;
        if !alive(pid) || !is_mounted(&mp) {
            return Ok(None);
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))?;
        let argv: Vec<String> = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let exe = std::fs::read_link(format!("/proc/{pid}/exe"))?;
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd"))?;
        let args: Vec<String> = argv.into_iter().skip(1).collect();
        // tegula [global flags] fs mount [flags] IMAGE MOUNTPOINT: IMAGE is the first word
        // after `mount` that is neither a flag nor a flag's value.
        let passthrough = args.iter().any(|a| a == "--passthrough");
        let image = if passthrough {
            None
        } else {
            let pos = args.iter().position(|a| a == "mount").unwrap_or(0);
            let mut words = Vec::new();
            let mut i = pos + 1;
            while i < args.len() {
                let a = &args[i];
                if let Some(flag) = a.strip_prefix("--") {
                    let takes_value = !a.contains('=')
                        && !matches!(
                            flag,
                            "foreground"
                                | "no-writeback-cache"
                                | "allow-other"
                                | "no-background-cleaning"
                                | "passthrough"
                                | "verbose"
                        );
                    i += if takes_value { 2 } else { 1 };
                    continue;
                }
                if a.starts_with('-') {
                    i += 1;
                    continue;
                }
                words.push(a.clone());
                i += 1;
            }
            words.first().map(|w| cwd.join(w))
        };
        Ok(Some(Mount {
            mountpoint: mp,
            pid,
            exe,
            args,
            cwd,
            image,
        }))
    }

    /// Unmounts and waits for the mount process to finish writing.
    pub(super) fn unmount(&self) -> Result<()> {
        // A file closed a moment ago may still hold the mount (FUSE sends release
        // asynchronously, and the kernel holds the mount until the mount process has answered
        // every release): retry EBUSY for up to a minute.
        let mut tries = 0;
        loop {
            let out = Command::new("fusermount3")
                .arg("-u")
                .arg(&self.mountpoint)
                .output()
                .context("running fusermount3")?;
            if out.status.success() {
                break;
            }
            tries += 1;
            if tries > 600 {
                bail!(
                    "fusermount3 -u {} failed: {}",
                    self.mountpoint.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let t0 = Instant::now();
        while alive(self.pid) {
            if t0.elapsed() > Duration::from_secs(600) {
                bail!("mount process {} did not finish within 600 s", self.pid);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Mounts again with the same command line (in the background); the new process.
    pub(super) fn remount(&self) -> Result<Mount> {
        let args: Vec<&String> = self.args.iter().filter(|a| *a != "--foreground").collect();
        let out = Command::new(&self.exe)
            .args(&args)
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .output()
            .context("remounting")?;
        if !out.status.success() {
            bail!(
                "remounting {} failed: {}",
                self.mountpoint.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // The new process writes its registry entry a moment after the mount is visible.
        for _ in 0..200 {
            if let Some(m) = Mount::find(&self.mountpoint)? {
                if m.pid != self.pid {
                    return Ok(m);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!("{} is not mounted again", self.mountpoint.display())
    }

    /// The profile since the last dump (and a reset).
    pub(super) fn profile(&self) -> Result<Value> {
        tegula_json(&["fs", "profile", &self.mountpoint.to_string_lossy()])
    }
}

/// The drive's counters and the file system's state, read from an unmounted image.
pub(super) fn drive_snapshot(image: &Path) -> Result<Value> {
    let img = image.to_string_lossy();
    let disk = tegula_json(&["disk", "stats", "--json", &img])?;
    let fs = tegula_json(&["fs", "stats", "--json", &img])?;
    Ok(
        json!({"disk": disk["stats"], "fs": {"total": fs["total"], "gc_estimate": fs["gc_estimate"], "statfs": fs["statfs"]}}),
    )
}

pub(super) fn num(v: &Value, path: &[&str]) -> f64 {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_f64().unwrap_or(0.0)
}

/// What a phase did to a drive: differences of two snapshots.
pub(super) fn drive_delta(before: &Value, after: &Value, wall_s: f64) -> Value {
    let d = |p: &[&str]| num(after, p) - num(before, p);
    let capacity = num(after, &["fs", "gc_estimate", "capacity"]);
    let used = num(after, &["fs", "total", "used"]);
    let dead_before = num(before, &["fs", "total", "dead"]);
    let dead_after = num(after, &["fs", "total", "dead"]);
    let died = d(&["fs", "gc_estimate", "deleted"]);
    let moved = d(&["fs", "gc_estimate", "moved"]);
    // Dead bytes the cleaner gave back: what died in the phase less what is still dead.
    let reclaimed = (died - (dead_after - dead_before)).max(0.0);
    json!({
        "device_s": d(&["disk", "busy_ns"]) / 1e9,
        "bytes_written": d(&["disk", "bytes_written"]),
        "media_bytes_written": d(&["disk", "media_bytes_written"]),
        "bytes_read": d(&["disk", "bytes_read"]),
        "fs_written": d(&["fs", "gc_estimate", "written"]),
        "died": died,
        "moved": moved,
        "reclaimed": reclaimed,
        "clean_rate_measured": if wall_s > 0.0 { reclaimed / wall_s } else { 0.0 },
        // `fs stats`' estimate averages the write rate since mkfs (idle gaps between phases
        // included) and takes the dead fraction the cleaner left; the §8.1 calculation at
        // this phase's own write rate and dead fraction is the need to set beside what the
        // cleaner did in the phase.
        "clean_rate_estimate": num(after, &["fs", "gc_estimate", "clean_rate"]),
        "clean_rate_estimate_phase": phase_clean_rate(after, d(&["fs", "gc_estimate", "written"]), died, wall_s),
        "write_amplification": num(after, &["fs", "gc_estimate", "write_amplification"]),
        "live": num(after, &["fs", "total", "live"]),
        "dead": dead_after,
        "usage": if capacity > 0.0 { used / capacity } else { 0.0 },
    })
}

/// The ShingledFS §8.1 cleaning rate at a phase's own write rate and dead fraction: at
/// `written` bytes in `wall_s` the drive fills to `fill` of its capacity in fill × capacity /
/// rate, and a drive filled by this workload holds capacity × (died / written) dead (the
/// fraction of what the phase wrote that it also deleted, at most 1), so the cleaner must
/// reclaim that fraction × rate / fill. The end state's dead fraction would not do: it is
/// what the cleaner left, so the better it cleans the less it would seem to need.
pub(super) fn phase_clean_rate(after: &Value, written: f64, died: f64, wall_s: f64) -> f64 {
    let fill = num(after, &["fs", "gc_estimate", "fill"]);
    if wall_s <= 0.0 || fill <= 0.0 || written <= 0.0 {
        return 0.0;
    }
    let dead_fraction = (died / written).min(1.0);
    dead_fraction * (written / wall_s) / fill
}

/// Call counts of a profile dump: total and the operations that were called.
pub(super) fn calls(profile: &Value) -> (u64, Map<String, Value>, u64) {
    let mut m = Map::new();
    let mut write_bytes = 0;
    if let Some(ops) = profile["ops"].as_array() {
        for op in ops {
            let n = op["calls"].as_u64().unwrap_or(0);
            let name = op["op"].as_str().unwrap_or("?").to_string();
            if name == "write" {
                write_bytes = op["bytes"].as_u64().unwrap_or(0);
            }
            if n > 0 {
                m.insert(name, json!(n));
            }
        }
    }
    (profile["total_calls"].as_u64().unwrap_or(0), m, write_bytes)
}
