//! One module per Skylight test (the paper's numbering); `run` dispatches by number.

use crate::error::Result;
use crate::session::Session;

mod fill;
mod frag;
pub(crate) mod t01_drive_type;
pub(crate) mod t02_cache_location;
pub(crate) mod t03_cleaning_type;
pub(crate) mod t04_cleaning_algorithm;
pub(crate) mod t05_cleaning_verified;
pub(crate) mod t06_raw_size;
pub(crate) mod t07_map_size;
pub(crate) mod t08_usable_size;
pub(crate) mod t09_circular_log;
pub(crate) mod t11_band_size;
pub(crate) mod t12_mapping;
pub(crate) mod t13_torn_writes;
pub(crate) mod t14_zones;
pub(crate) mod t15_worst_cleaning;

/// Runs test `id`; returns its one-line verdict.
pub(crate) fn run(id: u8, s: &mut Session<'_>) -> Result<String> {
    match id {
        1 => t01_drive_type::run(s),
        2 => t02_cache_location::run(s),
        3 => t03_cleaning_type::run(s),
        4 => t04_cleaning_algorithm::run(s),
        5 => t05_cleaning_verified::run(s),
        6 => t06_raw_size::run(s),
        7 => t07_map_size::run(s),
        8 => t08_usable_size::run(s),
        9 | 10 => t09_circular_log::run(s, id),
        11 => t11_band_size::run(s),
        12 => t12_mapping::run(s),
        13 => t13_torn_writes::run(s),
        14 => t14_zones::run(s),
        15 => t15_worst_cleaning::run(s),
        _ => Err(crate::error::ProbeError::Invalid(format!("no test {id}"))),
    }
}

/// Keys every report carries; a key no test set is recorded as unknown with the reason.
const KEYS: &[(&str, &str)] = &[
    ("drive_type", "1"),
    ("volatile_cache", "1"),
    ("cache.media", "1"),
    ("cache.layout", "2"),
    ("cache.location", "2"),
    ("cache.raw_bytes", "6"),
    ("cache.usable_bytes", "8"),
    ("cache.map_entries", "7"),
    ("cleaning.kind", "3"),
    ("cleaning.idle_delay_s", "3"),
    ("cleaning.algorithm", "4, 5"),
    ("cleaning.band_clean_s", "4"),
    ("cleaning.worst_band_clean_s", "4.9"),
    ("journal.entry_min_bytes", "1"),
    ("journal.entry_quantum_bytes", "1"),
    ("journal.oob_bytes", "1"),
    ("journal.map_merge_every", "1"),
    ("band_size_bytes", "11"),
    ("mapping", "12"),
    ("circular_log", "9, 10"),
    ("torn_writes", "13"),
    ("zones.surfaces", "14"),
    ("zones.layout", "14"),
    ("zones.plateaus", "14"),
];

/// Records every property no test determined, with the reason.
pub(crate) fn not_applicable(s: &mut Session<'_>) {
    let cmr = s.f.smr == Some(false);
    for &(key, tests) in KEYS {
        if s.report.property(key).is_some() {
            continue;
        }
        let smr_property = !matches!(
            key,
            "drive_type"
                | "volatile_cache"
                | "torn_writes"
                | "zones.surfaces"
                | "zones.layout"
                | "zones.plateaus"
        );
        let cut = s.cut.iter().find(|(id, _)| {
            tests
                .split(", ")
                .any(|x| crate::report::test_label(*id) == x)
        });
        let why = if cmr && smr_property {
            "not applicable: conventional drive (no persistent cache, no bands)".to_string()
        } else if let Some((id, why)) = cut {
            format!("TEST {}: {why}", crate::report::test_label(*id))
        } else {
            let ran = s.report.tests.iter().any(|t| {
                tests
                    .split(", ")
                    .any(|x| crate::report::test_label(t.id) == x)
            });
            if ran {
                "the test did not determine it".to_string()
            } else {
                format!("TEST {tests} was not run")
            }
        };
        s.report.unknown(key, tests, why);
    }
    // Keep the table in a stable order: the order of KEYS, then anything else.
    let order = |k: &str| KEYS.iter().position(|x| x.0 == k).unwrap_or(KEYS.len());
    s.report.properties.sort_by_key(|p| order(&p.key));
}
