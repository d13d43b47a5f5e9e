//! What the kernel says about a block device in sysfs (`/sys/dev/block/MAJ:MIN/queue/…`):
//! whether it is zoned, its zone size and count, its open and active limits and block sizes.
//! Read from a directory so that a test can lay out a fake one.

use crate::error::{DeviceError, Result};
use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The zoned model a block device reports in `queue/zoned`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZonedModel {
    /// `none`: a regular block device.
    None,
    /// `host-managed`: sequential-write-required zones (HM-SMR drives, ZNS namespaces).
    HostManaged,
    /// `host-aware`: sequential-write-preferred zones.
    HostAware,
}

impl ZonedModel {
    /// The model named by `queue/zoned`'s text.
    pub fn parse(text: &str) -> Option<ZonedModel> {
        match text.trim() {
            "none" => Some(ZonedModel::None),
            "host-managed" => Some(ZonedModel::HostManaged),
            "host-aware" => Some(ZonedModel::HostAware),
            _ => None,
        }
    }

    /// The name sysfs uses.
    pub fn name(self) -> &'static str {
        match self {
            ZonedModel::None => "none",
            ZonedModel::HostManaged => "host-managed",
            ZonedModel::HostAware => "host-aware",
        }
    }
}

/// The queue limits of a zoned block device (sizes in bytes; sysfs gives most in 512-byte
/// sectors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueLimits {
    /// `queue/zoned`.
    pub zoned: ZonedModel,
    /// Zone size in bytes (`queue/chunk_sectors` × 512).
    pub zone_bytes: u64,
    /// `queue/nr_zones`.
    pub nr_zones: u32,
    /// `queue/max_open_zones` (0 = no limit).
    pub max_open_zones: u32,
    /// `queue/max_active_zones` (0 = no limit).
    pub max_active_zones: u32,
    /// `queue/logical_block_size`.
    pub logical_block_size: u32,
    /// `queue/physical_block_size`.
    pub physical_block_size: u32,
    /// `queue/zone_append_max_bytes` (0 where the kernel does not say).
    pub zone_append_max_bytes: u64,
    /// `device/model` (or the device's name where there is none).
    pub model: String,
}

/// The sysfs directory of the block device `file` (at `path`): `/sys/dev/block/MAJ:MIN`.
/// Fails for anything but a block device.
pub fn dir_of(file: &File, path: &Path) -> Result<PathBuf> {
    let meta = file
        .metadata()
        .map_err(|e| DeviceError::io(format!("stat {}", path.display()), e))?;
    if !meta.file_type().is_block_device() {
        return Err(DeviceError::Config(format!(
            "{} is not a block device",
            path.display()
        )));
    }
    let rdev = meta.rdev();
    Ok(PathBuf::from(format!(
        "/sys/dev/block/{}:{}",
        libc::major(rdev),
        libc::minor(rdev)
    )))
}

/// The zoned model of the block device at `path`, or `None` for anything else (a regular
/// file, a missing path, a block device whose sysfs entry cannot be read).
pub fn zoned_model_of(path: &Path) -> Option<ZonedModel> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.file_type().is_block_device() {
        return None;
    }
    let rdev = meta.rdev();
    let dir = PathBuf::from(format!(
        "/sys/dev/block/{}:{}",
        libc::major(rdev),
        libc::minor(rdev)
    ));
    let text = std::fs::read_to_string(dir.join("queue/zoned")).ok()?;
    ZonedModel::parse(&text)
}

fn read_attr(dir: &Path, name: &str) -> Result<String> {
    let p = dir.join(name);
    std::fs::read_to_string(&p)
        .map(|s| s.trim().to_string())
        .map_err(|e| DeviceError::io(format!("reading {}", p.display()), e))
}

fn read_num(dir: &Path, name: &str) -> Result<u64> {
    let text = read_attr(dir, name)?;
    text.parse().map_err(|_| {
        DeviceError::Config(format!(
            "{}: {text:?} is not a number",
            dir.join(name).display()
        ))
    })
}

/// A number that older kernels do not have (0 then).
fn read_num_or_zero(dir: &Path, name: &str) -> Result<u64> {
    if !dir.join(name).exists() {
        return Ok(0);
    }
    read_num(dir, name)
}

impl QueueLimits {
    /// Reads the limits from the device directory `dir` (holding `queue/`). A partition of a
    /// zoned device has no `queue/` of its own and is refused: zones belong to the disk.
    pub fn read(dir: &Path) -> Result<QueueLimits> {
        let queue = dir.join("queue");
        if !queue.is_dir() {
            return Err(DeviceError::Config(format!(
                "{} has no queue directory (a partition? zoned devices are used whole)",
                dir.display()
            )));
        }
        let zoned_text = read_attr(&queue, "zoned")?;
        let zoned = ZonedModel::parse(&zoned_text)
            .ok_or_else(|| DeviceError::Config(format!("unknown zoned model {zoned_text:?}")))?;
        let u32_of = |name: &str, v: u64| {
            u32::try_from(v)
                .map_err(|_| DeviceError::Config(format!("queue/{name} {v} is out of range")))
        };
        let model = std::fs::read_to_string(dir.join("device/model"))
            .map(|s| s.trim().to_string())
            .ok()
            .filter(|s| !s.is_empty())
            .or_else(|| {
                std::fs::canonicalize(dir)
                    .ok()
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            })
            .unwrap_or_else(|| "unknown".into());
        Ok(QueueLimits {
            zoned,
            zone_bytes: read_num(&queue, "chunk_sectors")? * 512,
            nr_zones: u32_of("nr_zones", read_num_or_zero(&queue, "nr_zones")?)?,
            max_open_zones: u32_of(
                "max_open_zones",
                read_num_or_zero(&queue, "max_open_zones")?,
            )?,
            max_active_zones: u32_of(
                "max_active_zones",
                read_num_or_zero(&queue, "max_active_zones")?,
            )?,
            logical_block_size: u32_of(
                "logical_block_size",
                read_num(&queue, "logical_block_size")?,
            )?,
            physical_block_size: u32_of(
                "physical_block_size",
                read_num(&queue, "physical_block_size")?,
            )?,
            zone_append_max_bytes: read_num_or_zero(&queue, "zone_append_max_bytes")?,
            model,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn fake(dir: &Path, attrs: &[(&str, &str)]) {
        std::fs::create_dir_all(dir.join("queue")).unwrap();
        for (k, v) in attrs {
            std::fs::write(dir.join("queue").join(k), format!("{v}\n")).unwrap();
        }
    }

    #[test]
    fn limits_of_a_zns_namespace_are_read_in_bytes() {
        let t = tempfile::tempdir().unwrap();
        fake(
            t.path(),
            &[
                ("zoned", "host-managed"),
                ("chunk_sectors", "131072"),
                ("nr_zones", "64"),
                ("max_open_zones", "14"),
                ("max_active_zones", "14"),
                ("logical_block_size", "512"),
                ("physical_block_size", "4096"),
                ("zone_append_max_bytes", "131072"),
            ],
        );
        let l = QueueLimits::read(t.path()).unwrap();
        assert_eq!(l.zoned, ZonedModel::HostManaged);
        assert_eq!(l.zone_bytes, 64 << 20);
        assert_eq!(
            (l.nr_zones, l.max_open_zones, l.max_active_zones),
            (64, 14, 14)
        );
        assert_eq!((l.logical_block_size, l.physical_block_size), (512, 4096));
        assert_eq!(l.zone_append_max_bytes, 131072);
    }

    #[test]
    fn older_kernels_without_limits_read_as_unlimited_and_bad_text_is_an_error() {
        let t = tempfile::tempdir().unwrap();
        fake(
            t.path(),
            &[
                ("zoned", "host-aware"),
                ("chunk_sectors", "524288"),
                ("logical_block_size", "4096"),
                ("physical_block_size", "4096"),
            ],
        );
        let l = QueueLimits::read(t.path()).unwrap();
        assert_eq!(l.zoned, ZonedModel::HostAware);
        assert_eq!(
            (l.max_open_zones, l.max_active_zones, l.nr_zones),
            (0, 0, 0)
        );
        std::fs::write(t.path().join("queue/chunk_sectors"), "lots\n").unwrap();
        assert!(QueueLimits::read(t.path()).is_err());
        std::fs::write(t.path().join("queue/zoned"), "weird\n").unwrap();
        assert!(QueueLimits::read(t.path()).is_err());
        let none = tempfile::tempdir().unwrap();
        assert!(QueueLimits::read(none.path()).is_err());
    }

    #[test]
    fn a_regular_file_has_no_zoned_model() {
        let t = tempfile::NamedTempFile::new().unwrap();
        assert_eq!(zoned_model_of(t.path()), None);
        assert_eq!(zoned_model_of(Path::new("/nonexistent/x")), None);
    }
}
