//! A stand-alone front end to `tegula_fs::cli` (the same commands as `tegula fs …`) plus a
//! `create-image` helper, for trying the file system without the workspace binary:
//! `cargo run -p tegula-fs --example tegula-fs -- create-image --capacity 8GiB fs.img`.

use clap::Parser;
use std::path::PathBuf;

#[derive(Parser)]
#[command(about = "tegula file system on zones")]
enum Cli {
    /// Create a disk image (like `tegula disk create`).
    CreateImage {
        /// Drive profile.
        #[arg(long, default_value = "hm-smr")]
        profile: String,
        /// Capacity.
        #[arg(long, default_value = "8GiB")]
        capacity: String,
        /// Image path.
        path: PathBuf,
    },
    /// File-system commands.
    #[command(flatten)]
    Fs(tegula_fs::cli::FsCommand),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse() {
        Cli::CreateImage {
            profile,
            capacity,
            path,
        } => {
            let mut cfg = tegula_device::profile(&profile)?;
            cfg.capacity = tegula_device::parse_size(&capacity).map_err(anyhow::Error::msg)?;
            tegula_device::Disk::create_image(&path, cfg)?.close()?;
            Ok(())
        }
        Cli::Fs(cmd) => tegula_fs::cli::run(cmd),
    }
}
