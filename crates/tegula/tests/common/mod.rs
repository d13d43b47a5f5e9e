//! Support shared by the binary's end-to-end tests: running `tegula`, expecting success or a
//! clean failure, JSON output, temporary images, visible skips and tool checks.
#![allow(dead_code, clippy::unwrap_used)] // each test binary uses a different subset

use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary under test, with logging left at its default.
pub fn tegula_cmd() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tegula"));
    c.env_remove("RUST_LOG");
    c
}

/// Runs `tegula ARGS`, feeding `stdin` (none: an empty standard input).
pub fn tegula(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = tegula_cmd()
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tegula");
    if let Some(data) = stdin {
        let mut pipe = child.stdin.take().expect("stdin");
        pipe.write_all(data).expect("write stdin");
    }
    child.wait_with_output().expect("wait for tegula")
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs and expects success.
pub fn ok(args: &[&str]) -> Output {
    ok_in(args, None)
}

/// Runs with `stdin` and expects success.
pub fn ok_in(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let o = tegula(args, stdin);
    assert!(
        o.status.success(),
        "tegula {args:?} failed: {}\n{}",
        o.status,
        stderr(&o)
    );
    o
}

/// Runs, expects success and returns standard output.
pub fn ok_out(args: &[&str]) -> String {
    stdout(&ok(args))
}

/// Runs and expects a clean failure: exit status 1, a last line `error: …`, no panic.
/// Returns standard error.
pub fn fails(args: &[&str]) -> String {
    fails_in(args, None)
}

/// [`fails`] with `stdin`.
pub fn fails_in(args: &[&str], stdin: Option<&[u8]>) -> String {
    let o = tegula(args, stdin);
    let e = stderr(&o);
    assert!(
        !o.status.success(),
        "tegula {args:?} succeeded:\n{}",
        stdout(&o)
    );
    assert_eq!(o.status.code(), Some(1), "tegula {args:?}: {e}");
    assert!(!e.contains("panicked"), "tegula {args:?} panicked:\n{e}");
    let last = e.lines().last().unwrap_or("");
    assert!(last.starts_with("error: "), "tegula {args:?}: {e}");
    e
}

/// Runs without standard input (as [`std::process::Command::output`] would).
pub fn run(args: &[&str]) -> Output {
    tegula(args, None)
}

/// Runs and expects a failure with an `error:` line and no panic, whatever the exit status
/// (clap's usage errors exit 2). Returns standard error.
pub fn fails_any(args: &[&str]) -> String {
    let o = run(args);
    let e = stderr(&o);
    assert!(!o.status.success(), "tegula {args:?} succeeded");
    assert!(e.starts_with("error:") || e.contains("\nerror:"), "{e}");
    assert!(!e.contains("panicked"), "tegula {args:?} panicked:\n{e}");
    e
}

/// Expects `o` to be a success; returns its standard output.
pub fn success_out(o: &Output) -> String {
    assert!(o.status.success(), "failed: {}", stderr(o));
    stdout(o)
}

/// [`fails`], and the error names `want`.
pub fn fails_with(args: &[&str], want: &str) -> String {
    let e = fails(args);
    assert!(e.contains(want), "tegula {args:?}: want {want:?} in: {e}");
    e
}

/// Standard output parsed as JSON.
pub fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|err| panic!("bad JSON ({err}): {}", stdout(o)))
}

/// Runs, expects success and parses standard output as JSON.
pub fn ok_json(args: &[&str]) -> Value {
    json(&ok(args))
}

/// Creates a disk image `dir/name` of `profile` and `capacity` (plus `extra` flags).
pub fn image(dir: &Path, name: &str, profile: &str, capacity: &str, extra: &[&str]) -> String {
    let p = dir.join(name).display().to_string();
    let mut args = vec![
        "disk",
        "create",
        "--profile",
        profile,
        "--capacity",
        capacity,
    ];
    args.extend_from_slice(extra);
    args.push(&p);
    ok(&args);
    p
}

/// Says on the real standard error (past the test harness's capture, so CI shows it) that a
/// test did not run, and why.
pub fn skip(reason: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED: {reason}");
}

/// Whether `tool` is on the PATH.
pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Why FUSE mounts cannot run here, if they cannot.
pub fn fuse_missing() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing".into());
    }
    if !have("fusermount3") {
        return Some("fusermount3 is not installed (apt install fuse3)".into());
    }
    None
}

/// Unmounts `mnt`, retrying while the kernel still reports it busy (a file closed just before
/// is released asynchronously, and a process forked by a concurrent test may hold a
/// descriptor until it execs).
pub fn unmount(mnt: &Path) {
    let t0 = Instant::now();
    loop {
        let o = Command::new("fusermount3")
            .arg("-u")
            .arg(mnt)
            .output()
            .unwrap();
        if o.status.success() {
            return;
        }
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(
            err.contains("busy") && t0.elapsed() < Duration::from_secs(30),
            "fusermount3 -u {}: {err}",
            mnt.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until `path` exists (a server's socket), failing after `secs` seconds.
pub fn wait_for(path: &Path, secs: u64) {
    let t0 = Instant::now();
    while !path.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "{} did not appear",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
