//! Building a drive: in memory, as a new image, or from an existing image (restoring the media
//! state and rebuilding the translation layer from its metadata log); and closing it.

use super::{DmDrive, Inner};
use crate::check::{Finding, Severity};
use crate::config::{DmConfig, StlKind};
use crate::durable::Shape;
use crate::error::{Result, StlError};
use crate::fullassoc::FullyAssociative;
use crate::image::{DmImage, DM_IMAGE_VERSION};
use crate::journal::Journal;
use crate::layer::Layer;
use crate::layout::{plan, Layout};
use crate::metalog::{FileMeta, MetaLog};
use crate::setassoc::{flash_bytes, SetAssociative};
use parking_lot::Mutex;
use std::path::Path;
use std::time::Instant;
use tegula_device::cache::WriteCache;
use tegula_device::media::{ClockMode, Media};
use tegula_device::store::{FileStore, MemStore, NullStore, Store};
use tegula_device::DeviceInfo;

/// Where a new drive keeps its sectors and metadata.
enum Backing<'a> {
    Memory,
    Create(&'a Path),
}

impl DmDrive {
    /// Builds a drive in memory (sparse; metadata-only when `store_data` is false).
    pub fn new(config: DmConfig) -> Result<Self> {
        Self::build(config, Backing::Memory)
    }

    /// Creates a drive image at `path` (refuses to overwrite): the raw media's data region
    /// (sparse; absent when `store_data` is false), the drive state, and the translation
    /// layer's metadata log. See `docs/formats/dm-smr-image.md`.
    pub fn create_image(path: &Path, config: DmConfig) -> Result<Self> {
        let d = Self::build(config, Backing::Create(path))?;
        d.save_state()?;
        Ok(d)
    }

    fn build(config: DmConfig, backing: Backing<'_>) -> Result<Self> {
        let p = plan(&config)?;
        let (data_bytes, flash) = stored_bytes(&config, &p.layout, p.total);
        let shape = shape_of(&p.layout, p.total);
        let mut flash_store: Option<Box<dyn Store>> = None;
        let (store, log, image): (Box<dyn Store>, MetaLog, Option<DmImage>) = match backing {
            Backing::Memory => (
                if config.store_data {
                    Box::new(MemStore::new())
                } else {
                    Box::new(NullStore)
                },
                MetaLog::in_memory(),
                None,
            ),
            Backing::Create(path) => {
                let img = DmImage::create(path, &config, &p.layout, data_bytes, flash)?;
                let h = &img.header;
                if flash > 0 {
                    flash_store = Some(Box::new(FileStore::new(
                        img.handle()?,
                        h.flash_offset,
                        true,
                    )));
                }
                let store: Box<dyn Store> = if config.store_data {
                    Box::new(FileStore::new(img.handle()?, h.data_offset, true))
                } else {
                    Box::new(NullStore)
                };
                let meta = FileMeta::new(img.handle()?, h.meta_offset, h.meta_slot);
                let log = MetaLog::new(Box::new(meta), h.meta_slot, true);
                (store, log, Some(img))
            }
        };
        let (mut media, layout) = p.media(store)?;
        media.record_events(true);
        let layer = make_layer(&config, layout, log, shape, flash_store)?;
        Ok(Self::assemble(config, media, layer, image, false))
    }

    fn assemble(
        config: DmConfig,
        media: Media,
        layer: Box<dyn Layer>,
        image: Option<DmImage>,
        read_only: bool,
    ) -> Self {
        let ss = media.sector_size() as u64;
        let capacity = config.capacity / ss;
        let info = DeviceInfo {
            model: format!("tegula dm-smr {} ({:?} STL)", config.media, config.stl),
            kind: "dm-smr".into(),
            sector_size: ss as u32,
            capacity_sectors: capacity,
            zone_sectors: 0,
            zone_capacity_sectors: 0,
            zones: 0,
            conventional_zones: 0,
            max_open_zones: 0,
            max_active_zones: 0,
            unrestricted_reads: true,
            stores_data: config.store_data,
            wall_time: false,
        };
        DmDrive {
            inner: Mutex::new(Inner {
                media,
                layer,
                vcache: config.volatile_cache.then(|| WriteCache::new(ss as u32)),
                store_data: config.store_data,
                vcache_max: (config.volatile_cache_size / ss).max(1),
                bypass_min: (config.bypass_min / ss).max(1),
                last_io: 0,
                clock: ClockMode::Virtual,
                epoch: None,
                image,
                read_only,
                poisoned: None,
                destage_buf: Vec::new(),
                last_save: Instant::now(),
                crash_armed: false,
                warnings: Vec::new(),
            }),
            config,
            info,
        }
    }

    /// Opens a drive image: restores the media state, rebuilds the translation layer from
    /// its metadata log (finishing an interrupted band rewrite unless `read_only`).
    pub fn open_image(path: &Path, read_only: bool) -> Result<Self> {
        let (mut img, state) = DmImage::open(path, !read_only)?;
        let config = img.header.config.clone();
        let p = plan(&config)?;
        let (data_bytes, flash) = stored_bytes(&config, &p.layout, p.total);
        img.check_data(data_bytes, flash)?;
        let h = img.header.clone();
        let flash_store: Option<Box<dyn Store>> = if flash > 0 {
            Some(Box::new(FileStore::new(
                img.handle()?,
                h.flash_offset,
                !read_only,
            )))
        } else {
            None
        };
        let store: Box<dyn Store> = if config.store_data {
            Box::new(FileStore::new(img.handle()?, h.data_offset, !read_only))
        } else {
            Box::new(NullStore)
        };
        let shape = shape_of(&p.layout, p.total);
        let meta = FileMeta::new(img.handle()?, h.meta_offset, h.meta_slot);
        let log = MetaLog::new(Box::new(meta), h.meta_slot, false);
        let (mut media, layout) = p.media(store)?;
        media.record_events(true);
        let bad = |problem: String| StlError::Image {
            path: path.display().to_string(),
            problem: problem.into(),
        };
        let total = media.capacity();
        for (a, b) in state
            .media
            .destroyed
            .iter()
            .chain(state.media.injected.iter())
        {
            if b > total {
                return Err(bad(format!(
                    "damaged range {a}..{b} lies outside the media ({total} sectors)"
                )));
            }
        }
        media.set_now(state.media.now);
        // The damage as of the last save: the metadata log replaces it with its own (always in
        // step with the data and the map) unless the log predates format version 2.
        media.shingling_mut().set_destroyed(state.media.destroyed);
        media.set_injected(state.media.injected);
        media.restore_stats(state.media.stats);
        let mut layer = make_layer(&config, layout, log, shape, flash_store)?;
        layer.recover(&mut media, !read_only).map_err(|e| match e {
            e @ StlError::LogCorrupt { .. } => e,
            e => bad(format!("recovering the translation layer: {e}")),
        })?;
        let mut warnings: Vec<Finding> = img
            .warnings
            .iter()
            .map(|w| Finding::new(Severity::Warning, w.clone()))
            .collect();
        warnings.extend(layer.log().notes());
        if !read_only && layer.log().write_repair()? {
            warnings.push(Finding::new(
                Severity::Warning,
                "rewrote the damaged last metadata record from its tail copy",
            ));
        }
        if !read_only && (img.header.version < DM_IMAGE_VERSION || layer.log().is_v1()) {
            // An image of format version 1 keeps the damage only in the drive state: move it
            // into the log (header first, so that an older build refuses the image from now on).
            img.upgrade_header()?;
            layer.log().rewrite_checkpoint(&mut media)?;
            warnings.push(Finding::new(
                Severity::Note,
                format!("upgraded the image from format version 1 to {DM_IMAGE_VERSION}"),
            ));
        } else if img.header.version < DM_IMAGE_VERSION {
            warnings.push(Finding::new(
                Severity::Note,
                "format version 1: the damage map is the one of the last FLUSH (upgraded to \
                 version 2 when opened writable)",
            ));
        }
        let replayed = layer.stats().replayed_records;
        let mut s = state.stl.clone();
        s.replayed_records = replayed;
        layer.restore_stats(&s);
        let last = media.now();
        let d = Self::assemble(config, media, layer, Some(img), read_only);
        {
            let mut g = d.inner.lock();
            g.last_io = last;
            g.warnings = warnings;
        }
        Ok(d)
    }

    /// Builds a drive from a TOML configuration.
    pub fn from_toml(text: &str) -> Result<Self> {
        Self::new(DmConfig::from_toml(text)?)
    }

    /// Flushes the volatile cache, syncs the data and metadata, and persists the drive state;
    /// the image is complete afterwards. A no-op for in-memory drives.
    pub fn close(self) -> Result<()> {
        let mut g = self.inner.lock();
        if g.read_only || g.poisoned.is_some() || !g.media.is_powered() {
            return Ok(());
        }
        g.flush()?;
        Ok(())
    }
}

/// The bytes an image keeps for the data region and for the flash cache of a drive of
/// `total` sectors laid out as `layout` (none for a metadata-only drive).
fn stored_bytes(config: &DmConfig, layout: &Layout, total: u64) -> (u64, u64) {
    if config.store_data {
        (total * layout.sector, flash_bytes(config, layout))
    } else {
        (0, 0)
    }
}

/// The dimensions a layer's decoded metadata is checked against.
fn shape_of(layout: &Layout, total: u64) -> Shape {
    Shape {
        capacity: layout.capacity(),
        pos_limit: total,
        phys_bands: layout.bands.len(),
        logical_bands: layout.data.len(),
        cache_bands: 0,
        zones: 0,
        media: total,
    }
}

/// The translation layer the configuration names, over `log`.
fn make_layer(
    cfg: &DmConfig,
    layout: Layout,
    log: MetaLog,
    shape: Shape,
    flash: Option<Box<dyn Store>>,
) -> Result<Box<dyn Layer>> {
    Ok(match cfg.stl {
        StlKind::Journal => Box::new(Journal::new(cfg, layout, log, shape)?),
        StlKind::SetAssociative => Box::new(SetAssociative::new(cfg, layout, log, shape, flash)?),
        StlKind::FullyAssociative => Box::new(FullyAssociative::new(cfg, layout, log, shape)?),
    })
}
