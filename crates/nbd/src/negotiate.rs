//! The handshake: fixed newstyle negotiation (NBD_OPT_GO, EXPORT_NAME, INFO, LIST, ABORT) up to
//! the transmission phase.

use crate::proto::{self, info, opt, rep, tflag};
use crate::server::{ServerOptions, MAX_REQUEST};
use std::io::{self, Read, Write};
use tegula_device::BlockDevice;

/// Largest option payload the server reads.
const MAX_OPTION: u32 = 64 << 10;

fn tflags(dev: &dyn BlockDevice, opts: &ServerOptions) -> u16 {
    let _ = dev;
    let mut f = tflag::HAS_FLAGS
        | tflag::SEND_FLUSH
        | tflag::SEND_FUA
        | tflag::ROTATIONAL
        | tflag::CAN_MULTI_CONN;
    if opts.readonly {
        f |= tflag::READ_ONLY;
    } else {
        f |= tflag::SEND_TRIM | tflag::SEND_WRITE_ZEROES;
    }
    f
}

/// Returns whether transmission starts.
pub(crate) fn negotiate(
    r: &mut impl Read,
    w: &mut impl Write,
    dev: &dyn BlockDevice,
    opts: &ServerOptions,
) -> io::Result<bool> {
    let info_ = dev.info();
    let size = info_.capacity_bytes();
    w.write_all(&proto::NBDMAGIC.to_be_bytes())?;
    w.write_all(&proto::IHAVEOPT.to_be_bytes())?;
    w.write_all(&(proto::FLAG_FIXED_NEWSTYLE | proto::FLAG_NO_ZEROES).to_be_bytes())?;
    w.flush()?;
    let cflags = proto::get_u32(r)?;
    if cflags & proto::FLAG_C_FIXED_NEWSTYLE == 0 {
        // Only fixed newstyle clients are served.
        return Ok(false);
    }
    let no_zeroes = cflags & proto::FLAG_C_NO_ZEROES != 0;
    loop {
        if proto::get_u64(r)? != proto::IHAVEOPT {
            return Ok(false);
        }
        let option = proto::get_u32(r)?;
        let len = proto::get_u32(r)?;
        if len > MAX_OPTION {
            if len > 16 * MAX_OPTION {
                return Ok(false);
            }
            io::copy(&mut r.by_ref().take(len as u64), &mut io::sink())?;
            proto::option_reply(w, option, rep::ERR_TOO_BIG, &[])?;
            w.flush()?;
            continue;
        }
        let mut data = vec![0u8; len as usize];
        r.read_exact(&mut data)?;
        match option {
            opt::EXPORT_NAME => {
                w.write_all(&size.to_be_bytes())?;
                w.write_all(&tflags(dev, opts).to_be_bytes())?;
                if !no_zeroes {
                    w.write_all(&[0u8; 124])?;
                }
                w.flush()?;
                return Ok(true);
            }
            opt::ABORT => {
                proto::option_reply(w, option, rep::ACK, &[])?;
                w.flush()?;
                return Ok(false);
            }
            opt::LIST => {
                if !data.is_empty() {
                    proto::option_reply(w, option, rep::ERR_INVALID, &[])?;
                } else {
                    let mut d = (opts.name.len() as u32).to_be_bytes().to_vec();
                    d.extend_from_slice(opts.name.as_bytes());
                    proto::option_reply(w, option, rep::SERVER, &d)?;
                    proto::option_reply(w, option, rep::ACK, &[])?;
                }
            }
            opt::INFO | opt::GO => {
                let Some(requests) = parse_info_request(&data) else {
                    proto::option_reply(w, option, rep::ERR_INVALID, &[])?;
                    w.flush()?;
                    continue;
                };
                let mut d = info::EXPORT.to_be_bytes().to_vec();
                d.extend_from_slice(&size.to_be_bytes());
                d.extend_from_slice(&tflags(dev, opts).to_be_bytes());
                proto::option_reply(w, option, rep::INFO, &d)?;
                if requests.contains(&info::BLOCK_SIZE) {
                    let ss = info_.sector_size;
                    let mut d = info::BLOCK_SIZE.to_be_bytes().to_vec();
                    d.extend_from_slice(&1u32.to_be_bytes());
                    d.extend_from_slice(&ss.to_be_bytes());
                    d.extend_from_slice(&MAX_REQUEST.to_be_bytes());
                    proto::option_reply(w, option, rep::INFO, &d)?;
                }
                proto::option_reply(w, option, rep::ACK, &[])?;
                if option == opt::GO {
                    w.flush()?;
                    return Ok(true);
                }
            }
            opt::STARTTLS => proto::option_reply(w, option, rep::ERR_POLICY, &[])?,
            _ => proto::option_reply(w, option, rep::ERR_UNSUP, &[])?,
        }
        w.flush()?;
    }
}

/// Parses the data of NBD_OPT_INFO / NBD_OPT_GO: name length, name, info request count, codes.
fn parse_info_request(d: &[u8]) -> Option<Vec<u16>> {
    let nlen = u32::from_be_bytes(d.get(0..4)?.try_into().ok()?) as usize;
    let rest = d.get(4usize.checked_add(nlen)?..)?;
    let n = u16::from_be_bytes(rest.get(0..2)?.try_into().ok()?) as usize;
    let codes = rest.get(2..)?;
    if codes.len() != 2 * n {
        return None;
    }
    Some(
        codes
            .chunks(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_requests_parse_and_reject_garbage() {
        let mut d = 3u32.to_be_bytes().to_vec();
        d.extend_from_slice(b"abc");
        d.extend_from_slice(&1u16.to_be_bytes());
        d.extend_from_slice(&3u16.to_be_bytes());
        assert_eq!(parse_info_request(&d), Some(vec![3]));
        assert_eq!(parse_info_request(&d[..d.len() - 1]), None);
        assert_eq!(parse_info_request(&[0xff, 0xff, 0xff, 0xff, 0, 0]), None);
        assert_eq!(parse_info_request(&[]), None);
    }
}
