//! The probe's result: Skylight's Table III for one target, as typed fields (the JSON keys),
//! a list of properties with the test, evidence and confidence behind each, and the tests run.

use crate::targets::ClockKind;
use serde::Serialize;

/// SMR or conventional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DriveType {
    /// Shingled (drive-managed): random writes are logged at a fixed latency.
    Smr,
    /// Conventional: random writes pay a seek and a rotation each.
    Cmr,
}

/// Medium of the persistent cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheMedia {
    /// Tracks of the platters.
    Disk,
    /// Flash (sub-millisecond writes).
    Flash,
}

/// One persistent disk cache, or several spread over the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheLayout {
    /// One region.
    Single,
    /// Several regions across the disk.
    Distributed,
}

/// Where a single disk cache lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheLocation {
    /// Outer diameter (low LBAs).
    Od,
    /// Middle diameter.
    Md,
    /// Inner diameter (high LBAs).
    Id,
}

/// When the drive cleans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CleaningKind {
    /// In idle time.
    Aggressive,
    /// Only when the cache fills.
    Lazy,
}

/// Static or dynamic band mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mapping {
    /// Each LBA keeps its native physical location.
    Static,
    /// Cleaning moves a band to another physical band.
    Dynamic,
}

/// How consecutive surface runs are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZoneLayout {
    /// Short runs alternating direction (conventional drives).
    Serpentine,
    /// Long per-surface strokes, each outward to inward (horizontal zones, SMR drives).
    SurfaceStrokes,
}

/// The persistent cache (every field null on a CMR drive).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CacheReport {
    /// Disk or flash.
    pub media: Option<CacheMedia>,
    /// Single or distributed (null for flash).
    pub layout: Option<CacheLayout>,
    /// OD, MD or ID for a single disk cache.
    pub location: Option<CacheLocation>,
    /// Raw size: what small synchronous writes consume, padding and out-of-band data included
    /// (TEST 6).
    pub raw_bytes: Option<u64>,
    /// Host bytes the cache takes before cleaning starts (TEST 8).
    pub usable_bytes: Option<u64>,
    /// Entries of the cache map (TEST 7).
    pub map_entries: Option<u64>,
}

/// Cleaning.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CleaningReport {
    /// Aggressive (idle time) or lazy (cache full).
    pub kind: Option<CleaningKind>,
    /// Idle time before cleaning starts, seconds (aggressive drives).
    pub idle_delay_s: Option<f64>,
    /// "fifo" when TESTs 4-5 confirm Algorithm 1 (band by band, oldest cached block first).
    pub algorithm: Option<String>,
    /// Cleaning time of a band holding one changed block, seconds (TEST 4).
    pub band_clean_s: Option<f64>,
    /// Worst-case cleaning time of one band, seconds (section 4.9).
    pub worst_band_clean_s: Option<f64>,
}

/// Journal entries with quantized sizes (section 4.3.1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JournalReport {
    /// Smallest entry data area in bytes.
    pub entry_min_bytes: Option<u64>,
    /// Entries grow in steps of this many bytes.
    pub entry_quantum_bytes: Option<u64>,
    /// Out-of-band bytes written with every entry.
    pub oob_bytes: Option<u64>,
    /// A map merge (a slow write) every this many journal writes.
    pub map_merge_every: Option<u64>,
}

/// Band size at one offset (TEST 11).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BandSize {
    /// Byte offset where it was measured.
    pub offset: u64,
    /// Band size in bytes.
    pub bytes: u64,
}

/// One region of constant sequential throughput (TEST 14).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plateau {
    /// First byte.
    pub offset: u64,
    /// Length in bytes.
    pub bytes: u64,
    /// Sequential read throughput, MB/s.
    pub mb_per_s: f64,
}

/// Zone structure (TEST 14).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ZonesReport {
    /// Number of surfaces (heads).
    pub surfaces: Option<u32>,
    /// Serpentine or long per-surface strokes.
    pub layout: Option<ZoneLayout>,
    /// Length of one surface run in bytes, where measured.
    pub run_bytes: Option<u64>,
    /// Regions of constant throughput.
    pub plateaus: Vec<Plateau>,
}

/// An unreadable range after a power cut (TEST 13).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Range {
    /// First byte.
    pub offset: u64,
    /// Length in bytes.
    pub bytes: u64,
}

/// Torn writes (TEST 13).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TornReport {
    /// Power cuts made.
    pub cuts: u32,
    /// Cuts after which some blocks could not be read back.
    pub cuts_with_errors: u32,
    /// The unreadable ranges found (largest first, at most 32).
    pub unreadable: Vec<Range>,
}

/// One test as run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestRecord {
    /// Test number (15 stands for section 4.9).
    pub id: u8,
    /// Short name.
    pub name: String,
    /// Wall time it took, seconds.
    pub wall_s: f64,
    /// Device time it took, seconds (virtual time on an emulated drive).
    pub device_s: f64,
    /// One-line outcome.
    pub verdict: String,
    /// Whether it ran only because a selected test needed its findings.
    pub prerequisite: bool,
}

/// One row of the Table III report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Property {
    /// Key, as in the JSON (`cache.location`).
    pub key: String,
    /// Its value (null when undetermined).
    pub value: serde_json::Value,
    /// Tests behind it.
    pub tests: String,
    /// The measurement it rests on.
    pub evidence: String,
    /// 0..1: how clearly the measurements separate this value from the alternatives.
    pub confidence: f64,
    /// Why the value is null (the evidence of an undetermined property); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// Everything a probe found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// What was probed.
    pub target: String,
    /// Clock of the latencies.
    pub clock: ClockKind,
    /// Capacity in bytes.
    pub capacity_bytes: u64,
    /// Block size used, bytes.
    pub block_bytes: u64,
    /// SMR or CMR.
    pub drive_type: Option<DriveType>,
    /// The persistent cache.
    pub cache: CacheReport,
    /// Cleaning.
    pub cleaning: CleaningReport,
    /// Journal entries (null when the drive does not pack writes into quantized entries).
    pub journal: Option<JournalReport>,
    /// Band sizes at several offsets.
    pub band_size_bytes: Vec<BandSize>,
    /// Static or dynamic mapping.
    pub mapping: Option<Mapping>,
    /// Whether the cache is managed as a circular log (TESTs 9-10).
    pub circular_log: Option<bool>,
    /// Whether writes complete before they are durable (a volatile write cache).
    pub volatile_cache: Option<bool>,
    /// Zone structure.
    pub zones: Option<ZonesReport>,
    /// Torn writes after power cuts.
    pub torn_writes: Option<TornReport>,
    /// The tests run.
    pub tests: Vec<TestRecord>,
    /// Table III: every property with its value, tests, evidence and confidence; a null value
    /// carries the reason in `evidence`.
    pub properties: Vec<Property>,
}

impl Report {
    /// An empty report for a target.
    pub fn new(target: String, clock: ClockKind, capacity_bytes: u64, block_bytes: u64) -> Self {
        Report {
            target,
            clock,
            capacity_bytes,
            block_bytes,
            drive_type: None,
            cache: CacheReport::default(),
            cleaning: CleaningReport::default(),
            journal: None,
            band_size_bytes: Vec::new(),
            mapping: None,
            circular_log: None,
            volatile_cache: None,
            zones: None,
            torn_writes: None,
            tests: Vec::new(),
            properties: Vec::new(),
        }
    }

    /// Records a property (replacing an earlier row with the same key).
    pub fn set(
        &mut self,
        key: &str,
        value: serde_json::Value,
        tests: &str,
        evidence: impl Into<String>,
        confidence: f64,
    ) {
        let evidence = evidence.into();
        let p = Property {
            key: key.to_string(),
            why: value.is_null().then(|| evidence.clone()),
            value,
            tests: tests.to_string(),
            evidence,
            confidence: confidence.clamp(0.0, 1.0),
        };
        match self.properties.iter_mut().find(|q| q.key == key) {
            Some(q) => *q = p,
            None => self.properties.push(p),
        }
    }

    /// Records an undetermined property with the reason.
    pub fn unknown(&mut self, key: &str, tests: &str, reason: impl Into<String>) {
        self.set(key, serde_json::Value::Null, tests, reason, 0.0);
    }

    /// The property row `key`, if recorded.
    pub fn property(&self, key: &str) -> Option<&Property> {
        self.properties.iter().find(|p| p.key == key)
    }

    /// The report as a Table III-style text table.
    pub fn table(&self) -> String {
        let mut rows: Vec<[String; 5]> = vec![[
            "property".into(),
            "value".into(),
            "test".into(),
            "confidence".into(),
            "evidence".into(),
        ]];
        for p in &self.properties {
            rows.push([
                p.key.clone(),
                display_value(&p.key, &p.value),
                p.tests.clone(),
                confidence_word(p.confidence).to_string(),
                p.evidence.clone(),
            ]);
        }
        let w: Vec<usize> = (0..4)
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = format!("Skylight report for {}\n", self.target);
        for (i, r) in rows.iter().enumerate() {
            out.push_str(&format!(
                "{:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {}\n",
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                w0 = w[0],
                w1 = w[1],
                w2 = w[2],
                w3 = w[3]
            ));
            if i == 0 {
                out.push_str(&format!(
                    "{}\n",
                    "-".repeat(w.iter().sum::<usize>() + 8 + 8)
                ));
            }
        }
        out.push_str("\ntest  wall s  device s  verdict\n");
        for t in &self.tests {
            out.push_str(&format!(
                "{:>4}  {:>6.1}  {:>8.1}  {}{}\n",
                test_label(t.id),
                t.wall_s,
                t.device_s,
                t.verdict,
                if t.prerequisite {
                    " (prerequisite)"
                } else {
                    ""
                }
            ));
        }
        out
    }
}

/// How a test number is written: 15 is section 4.9.
pub fn test_label(id: u8) -> String {
    if id == 15 {
        "4.9".into()
    } else {
        id.to_string()
    }
}

/// Words for a confidence.
pub fn confidence_word(c: f64) -> &'static str {
    if c <= 0.0 {
        "-"
    } else if c >= 0.8 {
        "high"
    } else if c >= 0.5 {
        "medium"
    } else {
        "low"
    }
}

/// A property's value for the table: sizes in binary units, band sizes with their offsets.
fn display_value(key: &str, v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "unknown".into(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) if key.ends_with("_bytes") => {
            n.as_u64().map_or_else(|| n.to_string(), bytes)
        }
        serde_json::Value::Array(a) => a
            .iter()
            .map(|x| {
                match (
                    x.get("bytes").and_then(|b| b.as_u64()),
                    x.get("offset").and_then(|o| o.as_u64()),
                ) {
                    (Some(b), Some(o)) => format!("{} at {:.2} TB", bytes(b), o as f64 / 1e12),
                    _ => display_value(key, x),
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

/// Formats a byte count for the table (`20.0 GiB`, `512 KiB`).
pub fn bytes(n: u64) -> String {
    tegula_device::format_size(n)
}
