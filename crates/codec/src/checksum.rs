//! CRC-32C (Castagnoli), the checksum of every tegula format, plain and masked.

/// CRC-32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// CRC-32C of the bytes checksummed as `crc` followed by `data`: a checksum computed in pieces
/// (`crc32c_append(crc32c(a), b) == crc32c(a ++ b)`).
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// CRC-32C of `data`, masked as LevelDB does so that the checksum of bytes that embed a
/// checksum differs from that checksum (smrdb's formats).
pub fn masked_crc32c(data: &[u8]) -> u32 {
    crc32c(data).rotate_right(15).wrapping_add(0xa282_ead8)
}
