//! Reading a configuration (TOML over a profile, key by key) and resolving it into geometry,
//! timing, zones and shingling, with its validation.

use super::*;

/// Merges TOML table `over` into `base`, key by key, recursing into tables.
pub(super) fn merge(base: &mut toml::Value, over: toml::Value) {
    match (base, over) {
        (toml::Value::Table(b), toml::Value::Table(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(bv) if bv.is_table() && v.is_table() => merge(bv, v),
                    _ => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

impl DiskConfig {
    /// Parses a TOML configuration: `profile = "…"` (default `hm-smr`) plus any overrides.
    /// A `capacity` not given means the profile's full size.
    pub fn from_toml(text: &str) -> Result<Self> {
        let over: toml::Value = text
            .parse()
            .map_err(|e| DeviceError::Config(format!("{e}")))?;
        let name = over
            .get("profile")
            .and_then(|v| v.as_str())
            .unwrap_or("hm-smr")
            .to_string();
        let base = profile(&name)?;
        let mut v = toml::Value::try_from(&base).map_err(|e| DeviceError::Config(e.to_string()))?;
        merge(&mut v, over);
        let cfg: DiskConfig = v
            .try_into()
            .map_err(|e: toml::de::Error| DeviceError::Config(e.to_string()))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// The configuration as TOML text (what disk images store).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Applies a `key=value` override such as `media.rpm=5400` or `zones.zone_size=64MiB`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let mut v =
            toml::Value::try_from(&*self).map_err(|e| DeviceError::Config(e.to_string()))?;
        let parsed: toml::Value = format!("x = {value}")
            .parse::<toml::Value>()
            .ok()
            .and_then(|t| t.get("x").cloned())
            .unwrap_or_else(|| toml::Value::String(value.to_string()));
        let mut cur = &mut v;
        let parts: Vec<&str> = key.split('.').collect();
        for (i, p) in parts.iter().enumerate() {
            let t = cur
                .as_table_mut()
                .ok_or_else(|| DeviceError::Config(format!("{key}: {p} is not a table")))?;
            if i + 1 == parts.len() {
                t.insert((*p).to_string(), parsed.clone());
                break;
            }
            cur = t
                .get_mut(*p)
                .ok_or_else(|| DeviceError::Config(format!("unknown key {key}")))?;
        }
        let cfg: DiskConfig = v
            .try_into()
            .map_err(|e: toml::de::Error| DeviceError::Config(format!("{key}={value}: {e}")))?;
        *self = cfg;
        Ok(())
    }

    /// Checks ranges that the type system does not.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(DeviceError::Config(m));
        if self.sector_size != 512 && self.sector_size != 4096 {
            return bad(format!(
                "sector_size must be 512 or 4096, got {}",
                self.sector_size
            ));
        }
        let ss = self.sector_size as u64;
        if self.zones.zone_size == 0 || !self.zones.zone_size.is_multiple_of(ss) {
            return bad(format!(
                "zone_size {} must be a positive multiple of the sector size",
                self.zones.zone_size
            ));
        }
        if let Some(cap) = self.zones.zone_capacity {
            if cap == 0 || cap > self.zones.zone_size || !cap.is_multiple_of(ss) {
                return bad(format!(
                    "zone_capacity {cap} must be a positive multiple of the sector size no \
                     larger than zone_size {}",
                    self.zones.zone_size
                ));
            }
        }
        if self.zones.max_active > 0 && self.zones.max_open > self.zones.max_active {
            return bad(format!(
                "max_open {} exceeds max_active {} (an open zone is active)",
                self.zones.max_open, self.zones.max_active
            ));
        }
        if self.capacity < self.zones.zone_size {
            return bad(format!(
                "capacity {} is smaller than one zone ({} bytes)",
                self.capacity, self.zones.zone_size
            ));
        }
        if !(0.0..=1.0).contains(&self.zones.conventional_fraction) {
            return bad("conventional_fraction must be within 0..1".into());
        }
        if matches!(self.kind, DriveKind::HmSmr | DriveKind::HaSmr) {
            let n = self.zone_count();
            let conv = self.zones.conventional_zones.unwrap_or_else(|| {
                ((n as f64 * self.zones.conventional_fraction).ceil() as u32).max(1)
            });
            if conv >= n {
                return bad(format!(
                    "{conv} conventional zones leave no sequential zone on a {} drive of {n} \
                     zones (at most {} conventional; a drive of conventional zones only is \
                     kind = \"cmr\")",
                    self.kind.name(),
                    n.saturating_sub(1)
                ));
            }
        }
        if self.media.rpm < 1000 || self.media.rpm > 20000 {
            return bad(format!("rpm {} out of range 1000..20000", self.media.rpm));
        }
        if self.media.heads == 0 || self.media.heads > 64 {
            return bad(format!("heads {} out of range 1..64", self.media.heads));
        }
        if self.media.cylinders < 2 {
            return bad("cylinders must be at least 2".into());
        }
        if self.media.od_track_bytes < ss {
            return bad("od_track_bytes must hold at least one sector".into());
        }
        if self.shingle.overlap_tracks == 0 {
            return bad("overlap_tracks must be at least 1".into());
        }
        if self.media.stroke_tracks == Some(0) || self.media.strokes_per_surface == Some(0) {
            return bad("stroke_tracks and strokes_per_surface must be positive".into());
        }
        match (&self.interlace, self.kind) {
            (None, DriveKind::Imr) => {
                return bad("kind = \"imr\" needs an [interlace] table".into());
            }
            (Some(_), k) if k != DriveKind::Imr => {
                return bad(format!(
                    "[interlace] applies to kind = \"imr\" only, not {}",
                    k.name()
                ));
            }
            (Some(i), _) => {
                if !(i.bottom_top_ratio.is_finite() && (1.0..=4.0).contains(&i.bottom_top_ratio)) {
                    return bad(format!(
                        "interlace.bottom_top_ratio {} out of range 1..4",
                        i.bottom_top_ratio
                    ));
                }
                if self.shingle.overlap_tracks != 1 {
                    return bad("an imr drive is not shingled (overlap_tracks = 1)".into());
                }
            }
            (None, _) => {}
        }
        Ok(())
    }

    fn geometry_params(&self, cylinders: u64) -> GeometryParams {
        let stroke = match (self.media.strokes_per_surface, self.media.stroke_tracks) {
            (Some(s), _) => cylinders.div_ceil(s.max(1)),
            (None, Some(t)) => t,
            (None, None) => cylinders,
        };
        GeometryParams {
            sector_size: self.sector_size,
            rpm: self.media.rpm,
            heads: self.media.heads,
            cylinders,
            od_track_bytes: self.media.od_track_bytes,
            od_id_ratio: self.media.od_id_ratio,
            recording_zones: self.media.recording_zones,
            stroke: stroke.clamp(1, cylinders),
            serpentine: self.media.serpentine,
            interlace: self.interlace.as_ref().map(|i| i.bottom_top_ratio),
        }
    }

    /// Capacity of the full-size drive in bytes, rounded down to whole zones.
    pub fn full_capacity(&self) -> Result<u64> {
        let ss = self.sector_size as u64;
        let g = crate::mechanics::Mechanics::new(
            self.geometry_params(self.media.cylinders),
            &self.timing,
        )?;
        let bytes = g.geometry().total_sectors() * ss;
        Ok(bytes / self.zones.zone_size * self.zones.zone_size)
    }

    /// Builds the mechanics for this configuration's capacity.
    pub fn mechanics(&self) -> Result<crate::mechanics::Mechanics> {
        self.validate()?;
        let ss = self.sector_size as u64;
        let need = self.capacity / ss;
        let full = crate::mechanics::Mechanics::new(
            self.geometry_params(self.media.cylinders),
            &self.timing,
        )?;
        let full_sectors = full.geometry().total_sectors();
        if need > full_sectors {
            return Err(DeviceError::Config(format!(
                "capacity {} exceeds the profile's full drive ({} bytes); raise media.cylinders or heads",
                self.capacity,
                full_sectors * ss
            )));
        }
        if self.span == Span::Partition || need == full_sectors {
            return Ok(full);
        }
        // Scaled: the fewest cylinders (on the same radii) that hold the capacity.
        let (mut lo, mut hi) = (2u64, self.media.cylinders);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let m = crate::mechanics::Mechanics::new(self.geometry_params(mid), &self.timing)?;
            if m.geometry().total_sectors() >= need {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        crate::mechanics::Mechanics::new(self.geometry_params(lo), &self.timing)
    }

    /// The "CMR twin" of an interlaced configuration: the same geometry and timing with
    /// bottom-track writes damaging nothing (the paper's CMR baseline). Other kinds unchanged.
    pub fn cmr_twin(&self) -> DiskConfig {
        let mut c = self.clone();
        if let Some(i) = &mut c.interlace {
            i.damage = false;
        }
        c
    }

    /// Zone size in sectors.
    pub fn zone_sectors(&self) -> u64 {
        self.zones.zone_size / self.sector_size as u64
    }

    /// Writable sectors of each sequential zone (the zone capacity, or the zone size).
    pub fn zone_capacity_sectors(&self) -> u64 {
        self.zones.zone_capacity.unwrap_or(self.zones.zone_size) / self.sector_size as u64
    }

    /// Number of zones.
    pub fn zone_count(&self) -> u32 {
        (self.capacity / self.zones.zone_size) as u32
    }

    /// Number of conventional zones.
    pub fn conventional_zones(&self) -> u32 {
        let n = self.zone_count();
        match self.kind {
            DriveKind::Cmr | DriveKind::SmrRaw | DriveKind::Imr => n,
            DriveKind::HmSmr | DriveKind::HaSmr => {
                let c = self.zones.conventional_zones.unwrap_or_else(|| {
                    ((n as f64 * self.zones.conventional_fraction).ceil() as u32).max(1)
                });
                c.min(n)
            }
        }
    }

    /// Type of the sequential zones.
    pub fn seq_zone_type(&self) -> ZoneType {
        match self.kind {
            DriveKind::HaSmr => ZoneType::SeqWritePreferred,
            _ => ZoneType::SeqWriteRequired,
        }
    }

    /// Band layout of the media.
    pub fn band_layout(&self) -> BandLayout {
        if self.shingle.overlap_tracks <= 1 {
            return BandLayout::None;
        }
        let ss = self.sector_size as u64;
        match self.kind {
            DriveKind::Cmr | DriveKind::Imr => BandLayout::None,
            DriveKind::HmSmr | DriveKind::HaSmr => BandLayout::Lba {
                unshingled_sectors: self.conventional_zones() as u64 * self.zone_sectors(),
                band_sectors: self.zone_sectors(),
            },
            DriveKind::SmrRaw => BandLayout::Tracks {
                unshingled_sectors: self.shingle.unshingled_prefix / ss,
                band_tracks: self.shingle.band_tracks.unwrap_or(16),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_resolves_and_has_plausible_capacity() {
        for p in PROFILES {
            let c = profile(p).expect("profile");
            c.validate().expect("valid");
            let tb = c.capacity as f64 / 1e12;
            if p == "imr-paper" {
                // The slides' emulated 100 GB drive.
                assert!(tb > 0.09 && tb < 0.11, "{p}: {tb} TB");
            } else {
                assert!(tb > 3.0 && tb < 16.0, "{p}: {tb} TB");
            }
        }
    }

    #[test]
    fn toml_overrides_start_from_the_named_profile() {
        let c = DiskConfig::from_toml(
            "profile = \"cmr-7200\"\ncapacity = \"8GiB\"\n[media]\nrpm = 5400\n",
        )
        .expect("config");
        assert_eq!(c.kind, DriveKind::Cmr);
        assert_eq!(c.capacity, 8 << 30);
        assert_eq!(c.media.rpm, 5400);
        assert_eq!(c.media.heads, 10);
        assert!(DiskConfig::from_toml("profile = \"nope\"").is_err());
        assert!(DiskConfig::from_toml("capacity = \"4GiB\"\nbogus = 1").is_err());
        let back = DiskConfig::from_toml(&c.to_toml()).expect("round trip");
        assert_eq!(back, c);
    }

    #[test]
    fn dotted_overrides_apply_and_are_checked() {
        let mut c = profile("hm-smr").expect("profile");
        c.set("capacity", "\"4GiB\"").expect("set");
        c.set("zones.zone_size", "64MiB").expect("set");
        assert_eq!(c.zones.zone_size, 64 << 20);
        assert!(c.set("media.nope", "1").is_err());
        assert!(c.set("media.rpm", "fast").is_err());
    }

    #[test]
    fn interlace_is_checked_and_round_trips() {
        let c = profile("imr").expect("profile");
        let back = DiskConfig::from_toml(&c.to_toml()).expect("round trip");
        assert_eq!(back, c);
        let mut t = c.cmr_twin();
        assert_eq!(t.interlace.as_ref().map(|i| i.damage), Some(false));
        t.set("interlace.damage", "true").expect("set");
        assert_eq!(t, c);
        let mut bad = c.clone();
        bad.interlace = None;
        assert!(bad.validate().is_err());
        let mut bad = profile("cmr-7200").expect("profile");
        bad.interlace = c.interlace.clone();
        assert!(bad.validate().is_err());
        // A configuration of another kind has no [interlace] table in its TOML.
        assert!(!profile("hm-smr")
            .expect("profile")
            .to_toml()
            .contains("interlace"));
    }

    #[test]
    fn scaled_capacity_uses_fewer_cylinders() {
        let mut c = profile("hm-smr").expect("profile");
        c.capacity = 4 << 30;
        let m = c.mechanics().expect("mechanics");
        assert!(m.geometry().total_sectors() * 4096 >= 4 << 30);
        assert!(m.geometry().params().cylinders < 1000);
        c.span = Span::Partition;
        let m = c.mechanics().expect("mechanics");
        assert_eq!(m.geometry().params().cylinders, 557_000);
    }
}
