//! What formatting fixes on the drive. Sizes are in bytes, rounded up to whole sectors.

/// Options of [`crate::DmImr::format`], recorded in the superblock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatOptions {
    /// Size of the staging area that holds read-modify-write backups, split into two slots
    /// used in turn. Default 16 MiB; each slot must hold the two top tracks one bottom track
    /// can damage. A host write whose backup is larger is split into several RMWs.
    pub staging_bytes: u64,
}

impl Default for FormatOptions {
    fn default() -> Self {
        FormatOptions {
            staging_bytes: 16 << 20,
        }
    }
}
