//! `tegula bench hadoop …`: Hadoop's TeraGen, TeraSort and TeraValidate (the Java driver in
//! the repository's `hadoop/` Maven project) on a directory, and HDFS over several emulated
//! host-managed SMR drives, each behind its own `tegula fs mount`.
//!
//! ```text
//! tegula bench hadoop terasort --rows 1000000 --on DIR [--json FILE]
//! tegula bench hadoop hdfs --datanodes 4 --rows 1000000 --out DIR [--json FILE]
//! ```
//!
//! `--on DIR` may be a tegula fs mount, a pass-through mount (`tegula fs mount --passthrough`)
//! or a plain directory; the kind is found from the mount registry that `tegula fs profile`
//! uses. On a tegula fs mount the drive's counters are read between phases: the mount is
//! unmounted (every buffer written), `tegula disk stats` and `tegula fs stats` are read, and it
//! is mounted again with the command line it had. The phases' device time therefore includes
//! writing out everything a phase left buffered.
//!
//! The driver talks a line protocol on its standard streams (`@start PHASE`, `@end PHASE`,
//! answered with one line; `@result JSON` at the end): see `hadoop/src/main/java/dev/tegula/
//! hadoop/TeraBench.java`.

use super::args::Size;
use crate::cmd::fs::mount::{is_mounted, registry, Entry};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `tegula bench hadoop` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum HadoopCommand {
    /// TeraGen, TeraSort (optionally repeated), TeraValidate with the local job runner, data and
    /// temporary files in DIR (a tegula fs mount, a pass-through mount or a plain directory).
    Terasort(TerasortArgs),
    /// A MiniDFSCluster with one DataNode per emulated hm-smr drive (each its own tegula fs
    /// mount), TeraGen/TeraSort/TeraValidate against HDFS, and a drive lost during TeraSort.
    Hdfs(HdfsArgs),
}

impl HadoopCommand {
    /// Runs the subcommand.
    pub fn run(self) -> Result<()> {
        match self {
            HadoopCommand::Terasort(a) => terasort(&a).map(|_| ()),
            HadoopCommand::Hdfs(a) => hdfs(&a).map(|_| ()),
        }
    }
}

/// Where the Java driver is and how to start it.
#[derive(Debug, Clone, Args)]
pub struct JavaArgs {
    /// The Maven project of the driver (default: $TEGULA_HADOOP_DIR, else `hadoop/` in the
    /// current directory or one of its parents). Built with `mvn -B -q package` if its jar is
    /// missing.
    #[arg(long, value_name = "DIR")]
    pub hadoop_dir: Option<PathBuf>,
    /// The java command.
    #[arg(long, default_value = "java")]
    pub java: String,
    /// JVM heap (-Xmx).
    #[arg(long, default_value = "1g")]
    pub heap: String,
    /// Map tasks of TeraGen.
    #[arg(long, default_value_t = 4)]
    pub maps: u32,
    /// Reduce tasks of TeraSort.
    #[arg(long, default_value_t = 2)]
    pub reduces: u32,
    /// Hadoop's (the JVM's) log; default: a file beside the JSON or in the temporary directory.
    #[arg(long, value_name = "FILE")]
    pub java_log: Option<PathBuf>,
}

/// `tegula bench hadoop terasort`.
#[derive(Debug, Clone, Args)]
pub struct TerasortArgs {
    /// Rows of 100 bytes that TeraGen writes.
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: u64,
    /// Directory for the data and Hadoop's temporary files.
    #[arg(long, value_name = "DIR")]
    pub on: PathBuf,
    /// TeraSort runs (each deletes the previous run's output first).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Before TeraGen, fill the file system to this fraction of its size with a ballast file
    /// (removed at the end), so that the runs happen on a drive kept that full.
    #[arg(long, value_name = "FRACTION")]
    pub fill: Option<f64>,
    /// Write the results as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The driver.
    #[command(flatten)]
    pub java: JavaArgs,
}

/// `tegula bench hadoop hdfs`.
#[derive(Debug, Clone, Args)]
pub struct HdfsArgs {
    /// DataNodes, each on its own emulated drive and mount.
    #[arg(long, default_value_t = 4)]
    pub datanodes: usize,
    /// Rows of 100 bytes that TeraGen writes.
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: u64,
    /// Working directory: drive images, mount points, the NameNode's metadata, logs.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Capacity of each drive.
    #[arg(long, default_value = "2GiB")]
    pub capacity: Size,
    /// Drive profile.
    #[arg(long, default_value = "hm-smr")]
    pub profile: String,
    /// HDFS replication.
    #[arg(long, default_value_t = 3)]
    pub replication: u32,
    /// HDFS block size.
    #[arg(long, default_value = "16MiB")]
    pub block_size: Size,
    /// The DataNode whose drive is taken away during TeraSort (its mount process killed and
    /// the mount detached); `none` for no failure drill.
    #[arg(long, default_value = "0")]
    pub kill: String,
    /// Seconds into TeraSort at which the drive goes (at TeraSort's end if it is shorter).
    #[arg(long, default_value_t = 5.0)]
    pub kill_after: f64,
    /// Keep the drive images and the working directory.
    #[arg(long)]
    pub keep: bool,
    /// Write the results as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The driver.
    #[command(flatten)]
    pub java: JavaArgs,
}

// ---------------------------------------------------------------------------------------------
// The tegula binary itself, for the drives and mounts.

fn tegula() -> Result<PathBuf> {
    std::env::current_exe().context("locating the tegula binary")
}

fn tegula_cmd(args: &[&str]) -> Result<String> {
    let out = Command::new(tegula()?)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running tegula {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "tegula {} failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn tegula_json(args: &[&str]) -> Result<Value> {
    let text = tegula_cmd(args)?;
    serde_json::from_str(&text).with_context(|| format!("JSON of tegula {}", args.join(" ")))
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// A `tegula fs mount` process serving a mount point: enough to unmount it and mount it again
/// the same way.
#[derive(Debug, Clone)]
struct Mount {
    mountpoint: PathBuf,
    pid: u32,
    exe: PathBuf,
    args: Vec<String>,
    cwd: PathBuf,
    /// The image (None for a pass-through mount).
    image: Option<PathBuf>,
}

impl Mount {
    /// The mount serving `mp`, if it is a live tegula fs mount.
    fn find(mp: &Path) -> Result<Option<Mount>> {
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
    fn unmount(&self) -> Result<()> {
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
    fn remount(&self) -> Result<Mount> {
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
    fn profile(&self) -> Result<Value> {
        tegula_json(&["fs", "profile", &self.mountpoint.to_string_lossy()])
    }
}

/// The drive's counters and the file system's state, read from an unmounted image.
fn drive_snapshot(image: &Path) -> Result<Value> {
    let img = image.to_string_lossy();
    let disk = tegula_json(&["disk", "stats", "--json", &img])?;
    let fs = tegula_json(&["fs", "stats", "--json", &img])?;
    Ok(
        json!({"disk": disk["stats"], "fs": {"total": fs["total"], "gc_estimate": fs["gc_estimate"], "statfs": fs["statfs"]}}),
    )
}

fn num(v: &Value, path: &[&str]) -> f64 {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_f64().unwrap_or(0.0)
}

/// What a phase did to a drive: differences of two snapshots.
fn drive_delta(before: &Value, after: &Value, wall_s: f64) -> Value {
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
fn phase_clean_rate(after: &Value, written: f64, died: f64, wall_s: f64) -> f64 {
    let fill = num(after, &["fs", "gc_estimate", "fill"]);
    if wall_s <= 0.0 || fill <= 0.0 || written <= 0.0 {
        return 0.0;
    }
    let dead_fraction = (died / written).min(1.0);
    dead_fraction * (written / wall_s) / fill
}

/// Call counts of a profile dump: total and the operations that were called.
fn calls(profile: &Value) -> (u64, Map<String, Value>, u64) {
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

// ---------------------------------------------------------------------------------------------
// The Java driver.

fn hadoop_dir(a: &JavaArgs) -> Result<PathBuf> {
    if let Some(d) = &a.hadoop_dir {
        return Ok(d.clone());
    }
    if let Ok(d) = std::env::var("TEGULA_HADOOP_DIR") {
        return Ok(PathBuf::from(d));
    }
    let mut starts = vec![std::env::current_dir()?];
    if let Ok(exe) = std::env::current_exe() {
        starts.push(exe);
    }
    for s in starts {
        for dir in s.ancestors() {
            if dir.join("hadoop/pom.xml").is_file() {
                return Ok(dir.join("hadoop"));
            }
        }
    }
    bail!("no hadoop/pom.xml here or above, nor next to the binary: give --hadoop-dir or set TEGULA_HADOOP_DIR")
}

/// The driver's class path, building the Maven project if its jar is missing.
fn classpath(a: &JavaArgs) -> Result<String> {
    let dir = hadoop_dir(a)?;
    let jar = dir.join("target/tegula-hadoop.jar");
    let cp = dir.join("target/classpath.txt");
    if !jar.is_file() || !cp.is_file() {
        eprintln!(
            "building the Hadoop driver: mvn -B -q package in {}",
            dir.display()
        );
        let st = Command::new("mvn")
            .args(["-B", "-q", "package"])
            .current_dir(&dir)
            .status()
            .context("running mvn (is Maven installed?)")?;
        if !st.success() {
            bail!("mvn package failed in {}", dir.display());
        }
    }
    let deps = std::fs::read_to_string(&cp).with_context(|| format!("reading {}", cp.display()))?;
    Ok(format!("{}:{}", jar.display(), deps.trim()))
}

/// A running driver and its protocol.
struct Driver {
    child: Child,
    stdin: ChildStdin,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

enum Event {
    Start(String),
    End(String),
    Result(Value),
}

impl Driver {
    fn start(a: &JavaArgs, driver_args: &[String], log: &Path, tmp: &Path) -> Result<Driver> {
        let cp = classpath(a)?;
        std::fs::create_dir_all(tmp)?;
        let logf =
            std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = Command::new(&a.java);
        cmd.arg(format!("-Xmx{}", a.heap))
            .args([
                "--add-opens=java.base/java.lang=ALL-UNNAMED",
                "--add-opens=java.base/java.util=ALL-UNNAMED",
                "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
                "--add-opens=java.base/java.nio=ALL-UNNAMED",
                "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
                "--add-opens=java.base/java.io=ALL-UNNAMED",
                "--add-opens=java.base/java.net=ALL-UNNAMED",
                "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
                "-Djava.net.preferIPv4Stack=true",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            ])
            .arg(format!("-Djava.io.tmpdir={}", tmp.display()))
            .arg("-cp")
            .arg(cp)
            .arg("dev.tegula.hadoop.TeraBench")
            .args(driver_args)
            .arg("--sync")
            // The local job runner links distributed-cache files (TeraSort's _partition.lst)
            // into the working directory: give it one of its own.
            .current_dir(tmp)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(logf);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {} (is a JDK installed?)", a.java))?;
        let stdin = child.stdin.take().context("driver stdin")?;
        let stdout = child.stdout.take().context("driver stdout")?;
        Ok(Driver {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        })
    }

    fn next(&mut self) -> Result<Option<Event>> {
        for line in self.lines.by_ref() {
            let line = line?;
            if let Some(p) = line.strip_prefix("@start ") {
                return Ok(Some(Event::Start(p.trim().to_string())));
            }
            if let Some(p) = line.strip_prefix("@end ") {
                return Ok(Some(Event::End(p.trim().to_string())));
            }
            if let Some(r) = line.strip_prefix("@result ") {
                return Ok(Some(Event::Result(serde_json::from_str(r)?)));
            }
        }
        Ok(None)
    }

    fn answer(&mut self, s: &str) -> Result<()> {
        writeln!(self.stdin, "{s}")?;
        self.stdin.flush()?;
        Ok(())
    }

    fn finish(mut self, log: &Path) -> Result<()> {
        let st = self.child.wait()?;
        if !st.success() {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(30).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!(
                "the Hadoop driver exited with {st} (log {}):\n{}",
                log.display(),
                tail.join("\n")
            );
        }
        Ok(())
    }
}

fn log_path(a: &JavaArgs, json: Option<&PathBuf>, name: &str) -> PathBuf {
    if let Some(l) = &a.java_log {
        return l.clone();
    }
    match json {
        Some(j) => j.with_extension("hadoop.log"),
        None => std::env::temp_dir().join(format!("tegula-{name}-{}.log", std::process::id())),
    }
}

fn mib(b: f64) -> String {
    format!("{:.1}", b / (1u64 << 20) as f64)
}

fn write_json(path: Option<&PathBuf>, v: &Value) -> Result<()> {
    if let Some(p) = path {
        std::fs::write(p, serde_json::to_string_pretty(v)? + "\n")
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// terasort --on DIR

/// Fills the file system under `dir` to `fraction` of its size with `dir/ballast`.
fn fill(dir: &Path, fraction: f64) -> Result<u64> {
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

fn print_terasort(doc: &Value) {
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

// ---------------------------------------------------------------------------------------------
// hdfs --datanodes N

struct Drive {
    image: PathBuf,
    mnt: PathBuf,
    mount: Option<Mount>,
    killed: bool,
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

fn hdfs_run(
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
fn lose_drive(m: &Mount) {
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

fn print_hdfs(doc: &Value) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phase_need_is_the_dead_fraction_of_its_writes_times_its_rate_over_the_fill() {
        let after = json!({"fs": {"gc_estimate": {"fill": 0.7}}});
        let mib = (1u64 << 20) as f64;
        // Half of what it wrote died, at 10 MiB/s.
        let need = phase_clean_rate(&after, 100.0 * mib, 50.0 * mib, 10.0);
        assert!((need - 0.5 * 10.0 * mib / 0.7).abs() < 1.0, "{need}");
        // Deleting more than it wrote (older data too) needs no more than all of it.
        let all = phase_clean_rate(&after, 100.0 * mib, 300.0 * mib, 10.0);
        assert!((all - 10.0 * mib / 0.7).abs() < 1.0, "{all}");
        // No time, no writes or no fill: nothing to say.
        assert_eq!(phase_clean_rate(&after, 100.0 * mib, 50.0 * mib, 0.0), 0.0);
        assert_eq!(phase_clean_rate(&after, 0.0, 50.0 * mib, 10.0), 0.0);
        assert_eq!(
            phase_clean_rate(&json!({}), 100.0 * mib, 50.0 * mib, 10.0),
            0.0
        );
    }
}
