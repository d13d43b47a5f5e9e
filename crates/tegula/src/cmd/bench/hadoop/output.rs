//! Where a run's log and JSON go, and how sizes are printed.

use super::*;

pub(super) fn log_path(a: &JavaArgs, json: Option<&PathBuf>, name: &str) -> PathBuf {
    if let Some(l) = &a.java_log {
        return l.clone();
    }
    match json {
        Some(j) => j.with_extension("hadoop.log"),
        None => std::env::temp_dir().join(format!("tegula-{name}-{}.log", std::process::id())),
    }
}

pub(super) fn mib(b: f64) -> String {
    format!("{:.1}", b / (1u64 << 20) as f64)
}

pub(super) fn write_json(path: Option<&PathBuf>, v: &Value) -> Result<()> {
    if let Some(p) = path {
        std::fs::write(p, serde_json::to_string_pretty(v)? + "\n")
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}
