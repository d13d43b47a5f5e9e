//! NBD server throughput: fio 1 MiB sequential writes then reads over a Unix socket against an
//! unpaced in-memory drive. Prints one JSON line per job.
//!
//! `cargo run --release -p tegula-nbd --example nbd_bench [-- SIZE_MIB [cmr|dm|dm-image]]`
//! (`dm`: an in-memory journal drive with its volatile cache on; `dm-image`: the same drive in
//! a drive image file in the temporary directory.)

use std::process::Command;
use std::sync::Arc;
use tegula_device::{profile, BlockDevice, Disk};
use tegula_nbd::{Listener, ServerOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let size_mib: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1024);
    let kind = std::env::args().nth(2).unwrap_or_else(|| "cmr".into());
    let dir = tempfile::tempdir()?;
    let dev: Arc<dyn BlockDevice> = if kind.starts_with("dm") {
        let text = format!(
            "kind = \"dm-smr\"\ncapacity = \"{size_mib}MiB\"\nvolatile_cache = true\n\
             volatile_cache_size = \"64MiB\"\nband_size = \"32MiB\"\ncache_size = \"256MiB\"\n"
        );
        if kind == "dm-image" {
            let cfg = tegula_stl::DmConfig::from_toml(&text)?;
            Arc::new(tegula_stl::DmDrive::create_image(
                &dir.path().join("drive.img"),
                cfg,
            )?)
        } else {
            Arc::new(tegula_stl::DmDrive::from_toml(&text)?)
        }
    } else {
        let mut c = profile("cmr-7200")?;
        c.capacity = size_mib << 20;
        c.zones.zone_size = 64 << 20;
        Arc::new(Disk::in_memory(c)?)
    };
    let sock = dir.path().join("bench.sock");
    let l = Listener::unix(&sock)?;
    std::thread::spawn(move || l.serve(dev, ServerOptions::default()));
    for rw in ["write", "read"] {
        let out = Command::new("fio")
            .current_dir(dir.path())
            .arg("--name=bench")
            .arg("--ioengine=nbd")
            .arg(format!("--uri=nbd+unix:///?socket={}", sock.display()))
            .arg(format!("--rw={rw}"))
            .arg("--bs=1m")
            .arg("--iodepth=8")
            .arg(format!("--size={size_mib}m"))
            .arg("--output-format=json")
            .output()?;
        if !out.status.success() {
            return Err(format!("fio failed: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
        // fio may print notes before its JSON.
        let text = String::from_utf8_lossy(&out.stdout);
        let json = text.find("\n{").map_or(&text[..], |i| &text[i + 1..]);
        let v: serde_json::Value = serde_json::from_str(json)?;
        let bw = v["jobs"][0][rw]["bw_bytes"].as_f64().unwrap_or(0.0);
        println!(
            "{{\"bench\":\"nbd_seq_{rw}_1m\",\"device\":\"{kind}\",\"size_mib\":{size_mib},\"mb_per_s\":{:.0}}}",
            bw / 1e6
        );
    }
    Ok(())
}
