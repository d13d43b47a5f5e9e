//! The tegula binary itself, run as a child for the drives and mounts of a Hadoop run.

use super::*;

pub(super) fn tegula() -> Result<PathBuf> {
    std::env::current_exe().context("locating the tegula binary")
}

pub(super) fn tegula_cmd(args: &[&str]) -> Result<String> {
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

pub(super) fn tegula_json(args: &[&str]) -> Result<Value> {
    let text = tegula_cmd(args)?;
    serde_json::from_str(&text).with_context(|| format!("JSON of tegula {}", args.join(" ")))
}

pub(super) fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}
