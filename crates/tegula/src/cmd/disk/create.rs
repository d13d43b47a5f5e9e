//! `tegula disk create`.

use super::size_arg;
use crate::output;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use tegula_device::{profile, Disk, DiskConfig, Span};

/// On or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

/// How a capacity below the profile's full size is obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SpanArg {
    /// Fewer cylinders on the same radii: the whole drive in miniature.
    Scaled,
    /// The first CAPACITY bytes of the full drive (outer diameter).
    Partition,
}

/// Arguments of `disk create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Image file to create (refuses to overwrite).
    #[arg(value_name = "IMAGE")]
    pub image: PathBuf,
    /// Built-in profile to start from (see `tegula disk profiles`: zoned and conventional
    /// drives, and drive-managed SMR drives such as seagate-5tb-data) [default: hm-smr].
    #[arg(long, conflicts_with = "config")]
    pub profile: Option<String>,
    /// TOML configuration: `profile = "…"` plus any overrides, or a drive-managed SMR drive
    /// (`kind = "dm-smr"`, see docs/guides/drive-managed-smr.md).
    #[arg(long, value_name = "FILE.toml")]
    pub config: Option<PathBuf>,
    /// Capacity, e.g. 4GiB (rounded down to whole zones) [default: the profile's full drive].
    #[arg(long, value_name = "SIZE")]
    pub capacity: Option<String>,
    /// Zone size, e.g. 256MiB.
    #[arg(long, value_name = "SIZE")]
    pub zone_size: Option<String>,
    /// Number of conventional zones at the start of a zoned drive.
    #[arg(long, value_name = "N")]
    pub conv_zones: Option<u32>,
    /// Logical sector size: 512 or 4096.
    #[arg(long, value_name = "BYTES")]
    pub sector_size: Option<u32>,
    /// Keep no sector data (metadata-only simulation: reads return zeros, the image stays tiny).
    #[arg(long)]
    pub no_data: bool,
    /// Volatile write cache.
    #[arg(long, value_name = "on|off")]
    pub write_cache: Option<OnOff>,
    /// How a smaller capacity is cut from the full drive.
    #[arg(long)]
    pub span: Option<SpanArg>,
    /// Override any configuration key, e.g. media.rpm=5400 (repeatable; applied after
    /// --config/--profile and before the other flags).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Format an interlaced drive (profile imr or imr-paper) as drive-managed: three-phase
    /// track mapping and crash-safe read-modify-write inside the drive, behind the block
    /// interface, so that any block client (`tegula serve nbd`, fio, ext4) can use it.
    #[arg(long)]
    pub drive_managed: bool,
}

/// Builds the configuration the flags describe.
pub fn config_from(a: &CreateArgs) -> Result<DiskConfig> {
    let mut cfg = match &a.config {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading configuration {}", p.display()))?;
            DiskConfig::from_toml(&text).with_context(|| format!("{}", p.display()))?
        }
        None => profile(a.profile.as_deref().unwrap_or("hm-smr"))?,
    };
    for kv in &a.set {
        let (k, v) = kv
            .split_once('=')
            .with_context(|| format!("--set {kv}: expected KEY=VALUE, e.g. media.rpm=5400"))?;
        cfg.set(k.trim(), v.trim())
            .with_context(|| format!("--set {kv}"))?;
    }
    if let Some(c) = &a.capacity {
        cfg.capacity = size_arg("--capacity", c)?;
    }
    if let Some(z) = &a.zone_size {
        cfg.zones.zone_size = size_arg("--zone-size", z)?;
    }
    if let Some(n) = a.conv_zones {
        cfg.zones.conventional_zones = Some(n);
    }
    if let Some(s) = a.sector_size {
        cfg.sector_size = s;
    }
    if a.no_data {
        cfg.store_data = false;
    }
    if let Some(w) = a.write_cache {
        cfg.cache.write_cache = w == OnOff::On;
    }
    if let Some(s) = a.span {
        cfg.span = match s {
            SpanArg::Scaled => Span::Scaled,
            SpanArg::Partition => Span::Partition,
        };
    }
    cfg.validate()?;
    Ok(cfg)
}

/// Runs `disk create`.
pub fn run(a: CreateArgs) -> Result<()> {
    if let Some(p) = &a.config {
        let text = std::fs::read_to_string(p)
            .with_context(|| format!("reading configuration {}", p.display()))?;
        if super::dm::is_dm_config(&text) {
            if a.drive_managed {
                bail!("--drive-managed formats an interlaced (imr) drive; {} describes a drive-managed SMR drive already", p.display());
            }
            return super::dm::create(&a, &text);
        }
    }
    if let Some(text) = a
        .profile
        .as_deref()
        .and_then(tegula_stl::profiles::dm_profile_toml)
    {
        if a.drive_managed {
            bail!("--drive-managed formats an interlaced (imr) drive; this profile is a drive-managed SMR drive already");
        }
        return super::dm::create(&a, text);
    }
    let cfg = config_from(&a)?;
    if a.drive_managed && cfg.kind != tegula_device::DriveKind::Imr {
        bail!(
            "--drive-managed formats an interlaced drive (a profile of kind imr, such as imr or \
             imr-paper), not a {} drive",
            cfg.kind.name()
        );
    }
    if a.image.exists() {
        bail!(
            "{} already exists; refusing to overwrite it (remove it first)",
            a.image.display()
        );
    }
    let disk = match Disk::create_image(&a.image, cfg) {
        Ok(d) => d,
        Err(e) => {
            // Leave nothing half-made behind (the file did not exist before).
            let _ = std::fs::remove_file(&a.image);
            return Err(e.into());
        }
    };
    let mut summary = output::disk_summary(&disk, Some(&a.image));
    if a.drive_managed {
        summary.extend(super::dmimr::format(disk, &a.image)?);
    } else {
        super::close(disk, &a.image)?;
    }
    println!("created {}", a.image.display());
    output::print_kv(&summary);
    Ok(())
}
