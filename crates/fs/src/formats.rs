//! The on-disk decoders as plain functions over bytes, for property tests and fuzz targets
//! (`crates/fs/fuzz/`). Each decodes arbitrary bytes without panicking and, when the bytes
//! decode, checks that re-encoding gives a value that decodes to the same thing. Layouts:
//! `docs/formats/fs.md`.

use crate::journal::Superblock;
use crate::state::{Op, State, ZoneLogs, ZONE_LOGS};
use tegula_codec::{Dec, Enc, FormatError};

/// Decodes a superblock sector. `Ok(())` when it decodes and round-trips; `Err` names why
/// it was rejected. Panics only if a decoded superblock fails its own round trip (a bug).
pub fn superblock(b: &[u8]) -> Result<(), FormatError> {
    let sb = Superblock::decode(b)?;
    let again = Superblock::decode(&sb.encode()).map_err(|e| e.within("round trip"))?;
    assert_eq!(again, sb, "superblock round trip");
    Ok(())
}

/// Decodes a checkpoint payload (the whole metadata state); returns its inode count.
pub fn checkpoint(b: &[u8]) -> Result<usize, FormatError> {
    let s = State::decode(b)?;
    let again =
        State::decode(&s.encode()).map_err(|e| FormatError::from(e).within("round trip"))?;
    assert_eq!(again, s, "checkpoint round trip");
    Ok(s.inodes.len())
}

/// Decodes a log record payload (a batch of ops); returns how many ops it holds. Each op is
/// also applied to an empty state, which must fail with an error rather than a panic when
/// the op does not fit.
pub fn log_record(b: &[u8]) -> Result<usize, FormatError> {
    let mut d = Dec::new(b);
    let mut ops = Vec::new();
    while d.remaining() > 0 {
        ops.push(Op::decode(&mut d)?);
    }
    let mut e = Enc::new();
    for op in &ops {
        op.encode(&mut e);
    }
    let mut d = Dec::new(e.as_bytes());
    for op in &ops {
        let again = Op::decode(&mut d).map_err(|e| FormatError::from(e).within("round trip"))?;
        assert_eq!(&again, op, "op round trip");
    }
    let mut s = State::new(64, 0);
    for op in &ops {
        let _ = s.apply(op);
    }
    Ok(ops.len())
}

/// Decodes a per-zone append/delete log frame (`docs/formats/fs-zone-logs.md`); returns the
/// number of zones it covers.
pub fn zone_logs(b: &[u8]) -> Result<usize, FormatError> {
    let f = ZONE_LOGS.decode(b)?;
    let mut d = Dec::new(f.payload);
    let z = ZoneLogs::decode(&mut d)?;
    if d.remaining() != 0 {
        return Err(FormatError::invalid("trailing bytes"));
    }
    let mut e = Enc::new();
    z.encode(&mut e);
    let again = ZoneLogs::decode(&mut Dec::new(e.as_bytes()))
        .map_err(|e| FormatError::from(e).within("round trip"))?;
    assert_eq!(again, z, "zone logs round trip");
    Ok(z.len())
}
