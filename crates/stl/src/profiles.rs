//! Built-in drive-managed SMR drives (the TOML files in `crates/stl/profiles/`, compiled in so
//! that an installed binary needs no repository files): Skylight's Seagate ST5000AS0011 as it
//! inferred it (metadata-only and data-keeping variants) and its three emulated drives
//! (Table I). `tegula disk create --profile NAME` makes one.

use crate::config::DmConfig;
use crate::error::Result;

/// Name and TOML text of every built-in drive-managed drive.
pub const DM_PROFILES: &[(&str, &str)] = &[
    ("seagate-5tb", include_str!("../profiles/seagate-5tb.toml")),
    ("seagate-8tb", include_str!("../profiles/seagate-8tb.toml")),
    (
        "seagate-5tb-data",
        include_str!("../profiles/seagate-5tb-data.toml"),
    ),
    (
        "emulated-smr-1",
        include_str!("../profiles/emulated-smr-1.toml"),
    ),
    (
        "emulated-smr-2",
        include_str!("../profiles/emulated-smr-2.toml"),
    ),
    (
        "emulated-smr-3",
        include_str!("../profiles/emulated-smr-3.toml"),
    ),
];

/// The TOML text of the built-in drive-managed drive `name`.
pub fn dm_profile_toml(name: &str) -> Option<&'static str> {
    DM_PROFILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
}

/// The configuration of the built-in drive-managed drive `name`.
pub fn dm_profile(name: &str) -> Option<Result<DmConfig>> {
    dm_profile_toml(name).map(DmConfig::from_toml)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_built_in_profile_parses_and_validates() {
        for (name, _) in DM_PROFILES {
            let cfg = dm_profile(name).unwrap().unwrap();
            cfg.validate().unwrap();
        }
        assert!(dm_profile("no-such-drive").is_none());
    }
}
