//! `DmConfig`: the TOML description of a drive-managed SMR drive. `Default` is the one source of
//! defaults; `docs/guides/drive-managed-smr.md` documents every key.

use crate::error::{Result, StlError};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use tegula_device::units::{MS, SEC};
use tegula_device::Nanos;

/// Which shingle translation layer the drive runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StlKind {
    /// Cassuto's set-associative STL: cache band = data band mod n.
    SetAssociative,
    /// S-blocks style fully associative STL: zones with spare bands, dynamic remapping.
    FullyAssociative,
    /// The Seagate drives' journal with quantized entries and a bounded extent map.
    Journal,
}

/// Medium of the persistent cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheMedia {
    /// Shingled tracks of the same platters.
    Disk,
    /// A small flash device (sub-millisecond accesses).
    Flash,
}

/// Where a disk persistent cache lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheLocation {
    /// Outer diameter (lowest physical LBAs).
    Od,
    /// Inner diameter (highest physical LBAs).
    Id,
    /// Middle diameter.
    Md,
    /// Spread evenly over the disk.
    Distributed,
}

/// When cleaning runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cleaning {
    /// Only when the persistent cache (or its map) fills.
    Lazy,
    /// Also in idle time, after `idle_before_cleaning`.
    Aggressive,
}

/// How logical bands map to physical bands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mapping {
    /// Fixed native location per LBA, as on a CMR drive.
    Static,
    /// Logical bands move to free physical bands when cleaned.
    Dynamic,
}

/// A drive-managed SMR drive. Keys not given take the values of [`DmConfig::default`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DmConfig {
    /// Always `"dm-smr"`.
    pub kind: String,
    /// Raw shingled media profile of `tegula_device::profile` (default `smr-5900`).
    pub media: String,
    /// Host-visible capacity in bytes (default 1 GiB).
    #[serde(with = "size")]
    pub capacity: u64,
    /// Translation layer (default `journal`).
    pub stl: StlKind,
    /// Band size in bytes; 0 (the default) uses the media's track bands (`band_tracks` tracks
    /// each, so bands shrink toward the inner diameter, as on the Seagate drives).
    #[serde(with = "size")]
    pub band_size: u64,
    /// Tracks per band when `band_size` is 0; 0 (default) keeps the media profile's value.
    pub band_tracks: u64,
    /// Medium of the persistent cache (default `disk`; `flash` only with `set-associative`).
    pub cache_media: CacheMedia,
    /// Size of the persistent cache in bytes (default 64 MiB). For the journal this is the
    /// raw log size; for the fully associative layer the spare bands.
    #[serde(with = "size")]
    pub cache_size: u64,
    /// Where a disk cache lives (default `od`).
    pub cache_location: CacheLocation,
    /// Lazy or aggressive cleaning (default `aggressive`).
    pub cleaning: Cleaning,
    /// Idle time before aggressive cleaning starts (default 1 s). A number is seconds; strings
    /// such as `"1s"` or `"500ms"` are accepted.
    #[serde(with = "duration")]
    pub idle_before_cleaning: Nanos,
    /// Static or dynamic band mapping (default `static`; `dynamic` requires the fully
    /// associative layer, which is always dynamic).
    pub mapping: Mapping,
    /// Smallest journal entry data area in bytes (default 1 MiB, half an OD track).
    #[serde(with = "size")]
    pub journal_entry_min: u64,
    /// Journal entries grow in steps of this many bytes (default 1 MiB).
    #[serde(with = "size")]
    pub journal_entry_quantum: u64,
    /// Largest journal entry data area in bytes (default 4 MiB).
    #[serde(with = "size")]
    pub journal_entry_max: u64,
    /// Out-of-band bytes written with every journal entry (default 4 MiB, two OD tracks).
    #[serde(with = "size")]
    pub journal_oob: u64,
    /// Extent map capacity in entries (default 200,000).
    pub map_entries: u64,
    /// Cleaning starts when fewer than this fraction of map entries are free (default 0.09).
    pub map_low_watermark: f64,
    /// Cleaning starts when less than this fraction of the cache is free (default 0.05).
    pub cache_low_watermark: f64,
    /// Bytes one map entry takes in the on-media map copy (default 96): a map merge reads the
    /// old copy and writes a new one of `map_entries × map_entry_bytes`.
    pub map_entry_bytes: u64,
    /// A map merge runs after every this many journal writes (default 240; 0 = never).
    pub map_merge_every: u64,
    /// Volatile write cache: writes complete before they are durable (default false).
    pub volatile_cache: bool,
    /// Size of the volatile cache in bytes (default 64 MiB).
    #[serde(with = "size")]
    pub volatile_cache_size: u64,
    /// With the volatile cache on, runs of at least this many bytes bypass the persistent
    /// cache and overwrite their band in place (journal layer; default 1 MiB).
    #[serde(with = "size")]
    pub bypass_min: u64,
    /// Zone size of the fully associative layer in bytes (default 40 GiB, clipped to the drive).
    #[serde(with = "size")]
    pub zone_size: u64,
    /// Flash cache: latency of one access in microseconds (default 100).
    pub flash_latency_us: u64,
    /// Flash cache: transfer rate in MB/s (default 400).
    pub flash_mb_s: u64,
    /// Keep sector data (default true); false gives a metadata-only drive (reads return zeros).
    pub store_data: bool,
    /// Seed for fault injection (default 0).
    pub seed: u64,
}

impl Default for DmConfig {
    fn default() -> Self {
        DmConfig {
            kind: "dm-smr".into(),
            media: "smr-5900".into(),
            capacity: 1 << 30,
            stl: StlKind::Journal,
            band_size: 0,
            band_tracks: 0,
            cache_media: CacheMedia::Disk,
            cache_size: 64 << 20,
            cache_location: CacheLocation::Od,
            cleaning: Cleaning::Aggressive,
            idle_before_cleaning: SEC,
            mapping: Mapping::Static,
            journal_entry_min: 1 << 20,
            journal_entry_quantum: 1 << 20,
            journal_entry_max: 4 << 20,
            journal_oob: 4 << 20,
            map_entries: 200_000,
            map_low_watermark: 0.09,
            cache_low_watermark: 0.05,
            map_entry_bytes: 96,
            map_merge_every: 240,
            volatile_cache: false,
            volatile_cache_size: 64 << 20,
            bypass_min: 1 << 20,
            zone_size: 40 << 30,
            flash_latency_us: 100,
            flash_mb_s: 400,
            store_data: true,
            seed: 0,
        }
    }
}

impl DmConfig {
    /// Parses and validates a TOML configuration.
    pub fn from_toml(text: &str) -> Result<Self> {
        let c: DmConfig = toml::from_str(text).map_err(|e| StlError::Config(e.to_string()))?;
        c.validate()?;
        Ok(c)
    }

    /// The configuration as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Sets one key (`capacity`, `stl`, `cache_size`, …) from its command-line text: the value
    /// is read as a TOML value (number, boolean, string) or else as a string. The result is
    /// validated.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let text = toml::to_string(self).map_err(|e| StlError::Config(e.to_string()))?;
        let mut table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| StlError::Config(e.to_string()))?;
        if !table.contains_key(key) {
            return Err(StlError::Config(format!("unknown key {key:?}")));
        }
        let v = format!("v = {value}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.to_string()));
        table.insert(key.to_string(), v);
        let c: DmConfig = table
            .try_into()
            .map_err(|e: toml::de::Error| StlError::Config(format!("{key}: {e}")))?;
        c.validate()?;
        *self = c;
        Ok(())
    }

    /// Whether `text` looks like a drive-managed configuration (`kind = "dm-smr"`).
    pub fn is_dm_smr_toml(text: &str) -> bool {
        text.parse::<toml::Value>()
            .ok()
            .and_then(|v| {
                v.get("kind")
                    .and_then(|k| k.as_str())
                    .map(|k| k == "dm-smr")
            })
            .unwrap_or(false)
    }

    /// Checks ranges and combinations the types do not.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(StlError::Config(m.to_string()));
        if self.kind != "dm-smr" {
            return bad("kind must be \"dm-smr\"");
        }
        if self.capacity == 0 {
            return bad("capacity must be positive");
        }
        if self.cache_media == CacheMedia::Flash && self.stl != StlKind::SetAssociative {
            return bad("cache_media = \"flash\" is only supported with stl = \"set-associative\"");
        }
        if self.mapping == Mapping::Dynamic && self.stl != StlKind::FullyAssociative {
            return bad("mapping = \"dynamic\" requires stl = \"fully-associative\"");
        }
        if self.stl == StlKind::FullyAssociative && self.mapping == Mapping::Static {
            return bad("the fully associative layer remaps bands: set mapping = \"dynamic\"");
        }
        if self.stl == StlKind::FullyAssociative && self.band_size == 0 {
            return bad("the fully associative layer needs a fixed band_size");
        }
        if self.journal_entry_min == 0
            || self.journal_entry_quantum == 0
            || self.journal_entry_max < self.journal_entry_min
        {
            return bad("journal entries need 0 < min <= max and a positive quantum");
        }
        if !(0.0..1.0).contains(&self.map_low_watermark)
            || !(0.0..1.0).contains(&self.cache_low_watermark)
        {
            return bad("watermarks are fractions in [0, 1)");
        }
        if self.map_entries < 16 {
            return bad("map_entries must be at least 16");
        }
        if self.cache_size == 0 {
            return bad("cache_size must be positive");
        }
        if self.flash_mb_s == 0 {
            return bad("flash_mb_s must be positive");
        }
        Ok(())
    }
}

/// Serde helper: sizes as numbers or strings such as `"40MiB"` (the device crate's).
pub use tegula_device::units::size_serde as size;

/// Why a duration did not parse; each message quotes the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// The input does not start with a number.
    #[error("invalid duration {input:?}: expected e.g. 1s or 500ms")]
    Number {
        /// The input.
        input: String,
    },
    /// The unit is not one of s, ms, us, ns.
    #[error("invalid duration {input:?}: unknown unit {unit:?}")]
    Unit {
        /// The input.
        input: String,
        /// The unit.
        unit: String,
    },
    /// The duration is negative or not finite.
    #[error("invalid duration {input:?}")]
    Range {
        /// The input.
        input: String,
    },
}

/// Parses a duration such as `"1s"`, `"500ms"`, `"2.5s"`, `"100us"`.
pub fn parse_duration(s: &str) -> std::result::Result<Nanos, DurationError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| DurationError::Number { input: s.into() })?;
    let mult = match unit.trim() {
        "" | "s" => SEC as f64,
        "ms" => MS as f64,
        "us" => 1e3,
        "ns" => 1.0,
        other => {
            return Err(DurationError::Unit {
                input: s.into(),
                unit: other.into(),
            })
        }
    };
    let ns = v * mult;
    if !ns.is_finite() || ns < 0.0 {
        return Err(DurationError::Range { input: s.into() });
    }
    Ok(ns.round() as Nanos)
}

/// Serde helper: durations as seconds (number) or strings such as `"500ms"`.
pub mod duration {
    use super::*;

    /// Serializes as a string in milliseconds.
    pub fn serialize<S: Serializer>(v: &Nanos, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}ms", *v as f64 / MS as f64))
    }

    /// Accepts seconds as a number, or a duration string.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Nanos, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            I(u64),
            F(f64),
            S(String),
        }
        match Either::deserialize(d)? {
            Either::I(n) => Ok(n * SEC),
            Either::F(f) if f >= 0.0 && f.is_finite() => Ok((f * SEC as f64).round() as Nanos),
            Either::F(f) => Err(serde::de::Error::custom(format!("invalid duration {f}"))),
            Either::S(s) => parse_duration(&s).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_round_trip_and_keys_are_checked() {
        let c = DmConfig::default();
        let back = DmConfig::from_toml(&c.to_toml()).expect("round trip");
        assert_eq!(back, c);
        let c = DmConfig::from_toml(
            "kind = \"dm-smr\"\ncapacity = \"2GiB\"\nstl = \"set-associative\"\nband_size = \"40MiB\"\nidle_before_cleaning = \"500ms\"\n",
        )
        .expect("parse");
        assert_eq!(c.capacity, 2 << 30);
        assert_eq!(c.band_size, 40 << 20);
        assert_eq!(c.idle_before_cleaning, 500 * MS);
        assert!(DmConfig::from_toml("kind = \"dm-smr\"\nbogus = 1").is_err());
        assert!(DmConfig::from_toml("kind = \"cmr\"").is_err());
        assert!(DmConfig::from_toml("kind = \"dm-smr\"\ncache_media = \"flash\"").is_err());
        assert!(DmConfig::is_dm_smr_toml("kind = \"dm-smr\""));
        let mut c = DmConfig::default();
        c.set("capacity", "8GiB").expect("set");
        c.set("stl", "set-associative").expect("set");
        c.set("store_data", "false").expect("set");
        c.set("map_entries", "1000").expect("set");
        assert_eq!(c.capacity, 8 << 30);
        assert_eq!(c.stl, StlKind::SetAssociative);
        assert!(!c.store_data);
        assert!(c.set("bogus", "1").is_err());
        assert!(c.set("cleaning", "sometimes").is_err());
        assert!(c.set("map_entries", "-5").is_err());
        assert!(!DmConfig::is_dm_smr_toml("profile = \"cmr-7200\""));
    }
}
