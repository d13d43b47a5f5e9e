//! The checkpoint payload: the whole state encoded at once (`docs/formats/fs.md`,
//! "Checkpoint payload").

use super::inode::{decode_piece, encode_piece, Inode, Kind};
use super::zonelog::ZoneLogs;
use super::{Counters, State};
use crate::placement::Placement;
use std::collections::BTreeMap;
use tegula_codec::frame::Format;
use tegula_codec::{Dec, DecodeError, Enc};

/// The frame of the per-zone append and delete logs (`docs/formats/fs-zone-logs.md`).
pub const ZONE_LOGS: Format = Format::slot("fs zone logs", b"TGLFSZLG", 1);
/// The frame of the file-system parameters chosen by mkfs (`docs/formats/fs.md`).
pub const PARAMS: Format = Format::slot("fs parameters", b"TGLFSPRM", 1);

impl State {
    /// Serializes the whole state (a checkpoint payload).
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        e.u64(self.next_ino);
        e.u64(self.zone_live.len() as u64);
        e.u64(self.inodes.len() as u64);
        for (&ino, n) in &self.inodes {
            e.u64(ino);
            e.u8(n.kind.code());
            e.u32(n.perm);
            e.u32(n.uid);
            e.u32(n.gid);
            e.u32(n.nlink);
            e.u64(n.size);
            e.i64(n.times.atime);
            e.i64(n.times.mtime);
            e.i64(n.times.ctime);
            e.u64(n.parent);
            e.bytes_u32(&n.target);
            e.u64(n.entries.len() as u64);
            for (name, &c) in &n.entries {
                e.bytes_u32(name);
                e.u64(c);
            }
            e.u64(n.map.len() as u64);
            for (&off, p) in &n.map {
                e.u64(off);
                encode_piece(&mut e, p);
            }
        }
        let mut p = Enc::new();
        p.u8(self.placement.code());
        let c = &self.counters;
        for v in [c.written, c.moved, c.deleted, c.resets, c.rewinds] {
            p.u64(v);
        }
        p.i64(c.first_write);
        p.i64(c.last_write);
        e.raw(&PARAMS.encode(0, 0, p.as_bytes()));
        let mut z = Enc::new();
        self.zlogs.encode(&mut z);
        e.raw(&ZONE_LOGS.encode(0, 0, z.as_bytes()));
        e.into_bytes()
    }

    /// Deserializes a checkpoint payload; recomputes live bytes per zone.
    pub fn decode(b: &[u8]) -> Result<State, DecodeError> {
        let mut d = Dec::new(b);
        let next_ino = d.u64()?;
        let zones = d.u64()?;
        if zones > 1 << 20 {
            return Err(d.invalid("zone count"));
        }
        let mut s = State {
            inodes: BTreeMap::new(),
            next_ino,
            zone_live: vec![0; zones as usize],
            zlogs: ZoneLogs::new(zones as usize),
            placement: Placement::default(),
            counters: Counters::default(),
        };
        let n = d.count(60)?;
        for _ in 0..n {
            let ino = d.u64()?;
            let kind = Kind::from_code(d.u8()?).ok_or_else(|| d.invalid("inode kind"))?;
            let mut node = Inode::new(kind, 0, 0, 0, 0);
            node.perm = d.u32()?;
            node.uid = d.u32()?;
            node.gid = d.u32()?;
            node.nlink = d.u32()?;
            node.size = d.u64()?;
            node.times.atime = d.i64()?;
            node.times.mtime = d.i64()?;
            node.times.ctime = d.i64()?;
            node.parent = d.u64()?;
            node.target = d.bytes_u32()?.to_vec();
            let ne = d.count(12)?;
            for _ in 0..ne {
                let name = d.bytes_u32()?.to_vec();
                let c = d.u64()?;
                node.entries.insert(name, c);
            }
            let np = d.count(44)?;
            for _ in 0..np {
                let off = d.u64()?;
                let p = decode_piece(&mut d)?;
                if p.zone as u64 >= zones {
                    return Err(d.invalid("piece zone"));
                }
                if !p.fits() || off.checked_add(p.len).is_none() {
                    return Err(d.invalid("piece outside its extent"));
                }
                s.zone_live[p.zone as usize] = s.zone_live[p.zone as usize].saturating_add(p.len);
                node.map.insert(off, p);
            }
            s.inodes.insert(ino, node);
        }
        // The framed sections: parameters, then the zone logs.
        let f = PARAMS
            .decode(d.rest())
            .map_err(|_| d.invalid("parameters frame"))?;
        let mut p = Dec::new(f.payload);
        s.placement = Placement::from_code(p.u8()?).ok_or_else(|| p.invalid("placement policy"))?;
        s.counters = Counters {
            written: p.u64()?,
            moved: p.u64()?,
            deleted: p.u64()?,
            resets: p.u64()?,
            rewinds: p.u64()?,
            first_write: p.i64()?,
            last_write: p.i64()?,
        };
        if p.remaining() != 0 {
            return Err(p.invalid("trailing bytes in the parameters"));
        }
        d.take(f.total)?;
        let f = ZONE_LOGS
            .decode(d.rest())
            .map_err(|_| d.invalid("zone logs frame"))?;
        let mut z = Dec::new(f.payload);
        let zlogs = ZoneLogs::decode(&mut z)?;
        if z.remaining() != 0 {
            return Err(z.invalid("trailing bytes in the zone logs"));
        }
        d.take(f.total)?;
        if d.remaining() != 0 {
            return Err(d.invalid("trailing bytes"));
        }
        if zlogs.len() != s.zone_live.len() {
            return Err(d.invalid("zone logs of another zone count"));
        }
        for (i, &live) in s.zone_live.iter().enumerate() {
            if zlogs.zone(i as u32).map(|l| l.live_bytes()) != Some(live) {
                return Err(d.invalid("zone logs that disagree with the extent maps"));
            }
        }
        s.zlogs = zlogs;
        Ok(s)
    }
}
