//! A minimal NBD server (fixed newstyle handshake, `NBD_OPT_GO` / `NBD_OPT_EXPORT_NAME`,
//! simple replies; READ, WRITE, FLUSH, TRIM, WRITE_ZEROES, DISC) over a Unix socket, so that
//! this example can put ext4 on an emulated drive in-process (and sample the drive's clock)
//! without depending on the workspace's NBD crate. Protocol: the NBD protocol document
//! (github.com/NetworkBlockDevice/nbd, doc/proto.md).

use std::io::{self, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::Arc;
use tegula_device::BlockDevice;

const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
const REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
const REQ_MAGIC: u32 = 0x2560_9513;
const SIMPLE_REPLY: u32 = 0x6744_6698;
const OPT_EXPORT_NAME: u32 = 1;
const OPT_ABORT: u32 = 2;
const OPT_INFO: u32 = 6;
const OPT_GO: u32 = 7;
const REP_ACK: u32 = 1;
const REP_INFO: u32 = 3;
const REP_ERR_UNSUP: u32 = 0x8000_0001;
const FLAG_HAS_FLAGS: u16 = 1;
const FLAG_SEND_FLUSH: u16 = 1 << 2;
const FLAG_SEND_TRIM: u16 = 1 << 5;
const FLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
const TX_FLAGS: u16 = FLAG_HAS_FLAGS | FLAG_SEND_FLUSH | FLAG_SEND_TRIM | FLAG_SEND_WRITE_ZEROES;

fn u16be(r: &mut impl Read) -> io::Result<u16> {
    let mut b = [0u8; 2];
    r.read_exact(&mut b)?;
    Ok(u16::from_be_bytes(b))
}

fn u32be(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn u64be(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

fn opt_reply(w: &mut impl Write, opt: u32, kind: u32, data: &[u8]) -> io::Result<()> {
    let mut b = Vec::with_capacity(20 + data.len());
    b.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&opt.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    w.write_all(&b)
}

/// Serves every connection on `path` with its own thread, forever.
pub fn serve(path: &Path, dev: Arc<dyn BlockDevice>) -> io::Result<()> {
    let l = UnixListener::bind(path)?;
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let dev = dev.clone();
            std::thread::spawn(move || {
                if let Err(e) = connection(s, dev) {
                    if e.kind() != io::ErrorKind::UnexpectedEof {
                        eprintln!("nbd: connection ended: {e}");
                    }
                }
            });
        }
    });
    Ok(())
}

fn connection(mut s: UnixStream, dev: Arc<dyn BlockDevice>) -> io::Result<()> {
    let info = dev.info();
    let ss = info.sector_size as u64;
    let size = info.capacity_sectors * ss;
    let mut hello = Vec::new();
    hello.extend_from_slice(&NBDMAGIC.to_be_bytes());
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&3u16.to_be_bytes()); // fixed newstyle, no zeroes
    s.write_all(&hello)?;
    let client_flags = u32be(&mut s)?;
    let no_zeroes = client_flags & 2 != 0;
    loop {
        if u64be(&mut s)? != IHAVEOPT {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "bad option magic",
            ));
        }
        let opt = u32be(&mut s)?;
        let len = u32be(&mut s)? as usize;
        let mut data = vec![0u8; len];
        s.read_exact(&mut data)?;
        match opt {
            OPT_EXPORT_NAME => {
                let mut b = Vec::new();
                b.extend_from_slice(&size.to_be_bytes());
                b.extend_from_slice(&TX_FLAGS.to_be_bytes());
                if !no_zeroes {
                    b.extend_from_slice(&[0u8; 124]);
                }
                s.write_all(&b)?;
                break;
            }
            OPT_GO | OPT_INFO => {
                let mut b = Vec::new();
                b.extend_from_slice(&0u16.to_be_bytes()); // NBD_INFO_EXPORT
                b.extend_from_slice(&size.to_be_bytes());
                b.extend_from_slice(&TX_FLAGS.to_be_bytes());
                opt_reply(&mut s, opt, REP_INFO, &b)?;
                let mut bs = Vec::new();
                bs.extend_from_slice(&3u16.to_be_bytes()); // NBD_INFO_BLOCK_SIZE
                bs.extend_from_slice(&(ss as u32).to_be_bytes());
                bs.extend_from_slice(&(ss as u32).to_be_bytes());
                bs.extend_from_slice(&(32u32 << 20).to_be_bytes());
                opt_reply(&mut s, opt, REP_INFO, &bs)?;
                opt_reply(&mut s, opt, REP_ACK, &[])?;
                if opt == OPT_GO {
                    break;
                }
            }
            OPT_ABORT => {
                opt_reply(&mut s, opt, REP_ACK, &[])?;
                return Ok(());
            }
            _ => opt_reply(&mut s, opt, REP_ERR_UNSUP, &[])?,
        }
    }
    loop {
        if u32be(&mut s)? != REQ_MAGIC {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "bad request magic",
            ));
        }
        let _flags = u16be(&mut s)?;
        let cmd = u16be(&mut s)?;
        let handle = u64be(&mut s)?;
        let off = u64be(&mut s)?;
        let len = u32be(&mut s)? as u64;
        let mut payload = Vec::new();
        if cmd == 1 {
            payload = vec![0u8; len as usize];
            s.read_exact(&mut payload)?;
        }
        let aligned =
            off.is_multiple_of(ss) && len.is_multiple_of(ss) && off.saturating_add(len) <= size;
        let mut data = Vec::new();
        let err: u32 = match cmd {
            0 if aligned => {
                data = vec![0u8; len as usize];
                dev.read(off / ss, &mut data).map_or(5, |_| 0)
            }
            1 if aligned => dev.write(off / ss, &payload).map_or(5, |_| 0),
            2 => return Ok(()),
            3 => dev.flush().map_or(5, |_| 0),
            4 if aligned => dev.discard(off / ss, len / ss).map_or(5, |_| 0),
            6 if aligned => {
                let zero = vec![0u8; len as usize];
                dev.write(off / ss, &zero).map_or(5, |_| 0)
            }
            _ => 22,
        };
        let mut b = Vec::with_capacity(16 + data.len());
        b.extend_from_slice(&SIMPLE_REPLY.to_be_bytes());
        b.extend_from_slice(&err.to_be_bytes());
        b.extend_from_slice(&handle.to_be_bytes());
        if err == 0 {
            b.extend_from_slice(&data);
        }
        s.write_all(&b)?;
    }
}
