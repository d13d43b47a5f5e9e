//! Byte-addressed I/O on a sector-addressed device: NBD offsets and lengths need not be whole
//! sectors, so partial sectors are read (and, for writes, patched and written back).

use crate::proto::errno;
use tegula_device::{BlockDevice, DeviceError, WriteFlags};

/// The NBD error number of a device error.
pub(crate) fn dev_errno(e: &DeviceError) -> u32 {
    match e {
        DeviceError::OutOfRange { .. } | DeviceError::NoSpace(_) => errno::ENOSPC,
        DeviceError::BadLength { .. } => errno::EINVAL,
        DeviceError::ReadOnlyHandle => errno::EPERM,
        DeviceError::Unsupported(_) => errno::ENOTSUP,
        _ => errno::EIO,
    }
}

/// Reads the whole sectors covering bytes `[off, off + len)`: the first sector, their bytes,
/// and where byte `off` is among them.
fn read_covering(
    dev: &dyn BlockDevice,
    ss: u64,
    off: u64,
    len: u64,
) -> Result<(u64, Vec<u8>, usize), DeviceError> {
    let first = off / ss;
    let last = (off + len).div_ceil(ss);
    let mut tmp = vec![0u8; ((last - first) * ss) as usize];
    dev.read(first, &mut tmp)?;
    Ok((first, tmp, (off - first * ss) as usize))
}

/// Reads bytes `[off, off + buf.len())`, handling offsets and lengths that are not whole
/// sectors by reading the covering sectors.
pub(crate) fn read_bytes(
    dev: &dyn BlockDevice,
    ss: u64,
    off: u64,
    buf: &mut [u8],
) -> Result<(), DeviceError> {
    let len = buf.len() as u64;
    if off.is_multiple_of(ss) && len.is_multiple_of(ss) {
        dev.read(off / ss, buf)?;
        return Ok(());
    }
    let (_, tmp, s) = read_covering(dev, ss, off, len)?;
    buf.copy_from_slice(&tmp[s..s + buf.len()]);
    Ok(())
}

/// Writes bytes at `off`; partial sectors are read, patched and written back.
pub(crate) fn write_bytes(
    dev: &dyn BlockDevice,
    ss: u64,
    off: u64,
    data: &[u8],
    fua: bool,
) -> Result<(), DeviceError> {
    let len = data.len() as u64;
    let flags = WriteFlags { fua };
    if off.is_multiple_of(ss) && len.is_multiple_of(ss) {
        dev.write_with(off / ss, data, flags)?;
        return Ok(());
    }
    let (first, mut tmp, s) = read_covering(dev, ss, off, len)?;
    tmp[s..s + data.len()].copy_from_slice(data);
    dev.write_with(first, &tmp, flags)?;
    Ok(())
}

/// [`write_bytes`] from a buffer the device may keep (see [`BlockDevice::write_owned`]);
/// returns the result and a buffer for the next write.
pub(crate) fn write_buffer(
    dev: &dyn BlockDevice,
    ss: u64,
    off: u64,
    data: Vec<u8>,
    fua: bool,
) -> (Result<(), DeviceError>, Option<Vec<u8>>) {
    let len = data.len() as u64;
    if off.is_multiple_of(ss) && len.is_multiple_of(ss) {
        return match dev.write_owned(off / ss, data, WriteFlags { fua }) {
            Ok((_, back)) => (Ok(()), Some(back)),
            Err(e) => (Err(e), None),
        };
    }
    let r = write_bytes(dev, ss, off, &data, fua);
    (r, Some(data))
}
