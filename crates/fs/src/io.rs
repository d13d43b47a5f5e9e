//! File data: reads through the extent map and write buffer, buffered writes, and placement
//! of buffered data as ZEA extents in the sequential zones.

use crate::error::{FsError, Result};
use crate::fs::{now_ns, Fs, OpenFile};
use crate::state::{Kind, Op, Piece};

impl Fs {
    fn file(&self, ino: u64) -> Result<()> {
        match self.state.get(ino) {
            None => Err(FsError::NotFound),
            Some(n) if n.kind == Kind::Dir => Err(FsError::IsDir),
            Some(n) if n.kind != Kind::File => Err(FsError::Invalid("not a regular file".into())),
            Some(_) => Ok(()),
        }
    }

    /// Reads up to `len` bytes at `off` (fewer at the end of the file).
    pub fn read(&self, ino: u64, off: u64, len: usize) -> Result<Vec<u8>> {
        self.file(ino)?;
        let size = self.cur_size(ino);
        if off >= size || len == 0 {
            return Ok(Vec::new());
        }
        let end = size.min(off + len as u64);
        let mut out = vec![0u8; (end - off) as usize];
        let pieces: Vec<(u64, Piece)> = {
            let map = &self.state.get(ino).ok_or(FsError::NotFound)?.map;
            let first = map.range(..=off).next_back().map_or(off, |(&s, _)| s);
            map.range(first..end).map(|(&s, &p)| (s, p)).collect()
        };
        for (s, p) in pieces {
            let a = s.max(off);
            let b = (s + p.len).min(end);
            if a >= b {
                continue;
            }
            let data = self.pool.read(&p, a - s, b - a)?;
            out[(a - off) as usize..(b - off) as usize].copy_from_slice(&data);
        }
        if let Some(f) = self.files.get(&ino) {
            f.buf.overlay(off, &mut out);
        }
        Ok(out)
    }

    /// Buffers a write at `off` (at the end of the file when `append`); returns the offset
    /// written at. Full buffers are written out as extents.
    pub fn write(&mut self, ino: u64, off: u64, data: &[u8], append: bool) -> Result<u64> {
        self.writable()?;
        self.file(ino)?;
        if data.is_empty() {
            return Ok(off);
        }
        if data.len() as u64 > self.free_estimate() {
            return Err(FsError::NoSpace(format!(
                "{} bytes buffered or free",
                self.free_estimate()
            )));
        }
        let size = self.state.get(ino).map_or(0, |n| n.size);
        let f = self.files.entry(ino).or_insert_with(|| OpenFile {
            size,
            ..OpenFile::default()
        });
        let off = if append { f.size } else { off };
        let before = f.buf.bytes();
        f.buf.write(off, data);
        f.size = f.size.max(off + data.len() as u64);
        let after = f.buf.bytes();
        self.dirty = self.dirty + after - before;
        if after >= self.opts.buffer_bytes {
            self.flush_file(ino)?;
        }
        if self.dirty > self.opts.dirty_limit {
            let biggest = self
                .files
                .iter()
                .max_by_key(|(_, f)| f.buf.bytes())
                .map(|(&i, _)| i);
            if let Some(i) = biggest {
                self.flush_file(i)?;
            }
        }
        self.maybe_commit()?;
        Ok(off)
    }

    /// Writes a file's buffer as extents and maps them (not yet committed). On failure the
    /// unwritten bytes stay buffered.
    pub(crate) fn flush_file(&mut self, ino: u64) -> Result<()> {
        loop {
            let Some(f) = self.files.get_mut(&ino) else {
                return Ok(());
            };
            let Some((off, data)) = f.buf.pop_first() else {
                if f.opens == 0 {
                    self.files.remove(&ino);
                }
                return Ok(());
            };
            self.dirty -= data.len();
            let mut done = 0usize;
            let mut failure = None;
            while done < data.len() {
                match self.place(ino, off + done as u64, &data[done..]) {
                    Ok(n) => done += n,
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
            if let Some(e) = failure {
                let rest = data[done..].to_vec();
                self.dirty += rest.len();
                if let Some(f) = self.files.get_mut(&ino) {
                    f.buf.put_back(off + done as u64, rest);
                }
                return Err(e);
            }
        }
    }

    /// Writes a prefix of `data` as one extent in the active user zone and maps it; returns
    /// how many bytes it placed.
    fn place(&mut self, ino: u64, off: u64, data: &[u8]) -> Result<usize> {
        let zone = self.user_zone()?;
        let n = (data.len() as u64)
            .min(self.pool.max_put(zone))
            .min(self.opts.max_extent) as usize;
        let placed = match self.pool.put(zone, off, ino, &data[..n]) {
            Ok(p) => p,
            Err(e) => {
                if !matches!(e, FsError::NoSpace(_)) {
                    self.broken = Some(e.to_string());
                }
                return Err(e);
            }
        };
        self.log(Op::Map {
            ino,
            off,
            piece: Piece {
                len: n as u64,
                zone,
                ext_lba: placed.lba,
                ext_len: n as u64,
                ext_off: 0,
            },
            mtime: Some(now_ns()),
        })?;
        Ok(n)
    }

    /// Empty sequential zones that no writer holds.
    pub(crate) fn empty_zones(&self) -> Vec<u32> {
        self.pool
            .seq_zones()
            .filter(|&z| {
                self.pool.is_empty(z)
                    && Some(z) != self.active_user
                    && Some(z) != self.active_gc
                    && !self.bad_zones.contains(&z)
            })
            .collect()
    }

    /// The zone user data goes to, opening a new one (and cleaning if needed) when the
    /// current one is full. One empty zone always stays in reserve for the cleaner.
    fn user_zone(&mut self) -> Result<u32> {
        if let Some(z) = self.active_user {
            if self.pool.max_put(z) > 0 {
                return Ok(z);
            }
            self.active_user = None;
        }
        loop {
            let empty = self.empty_zones();
            if empty.len() >= 2 {
                self.active_user = Some(empty[0]);
                return Ok(empty[0]);
            }
            if !self.clean_one()? {
                return Err(FsError::NoSpace("every zone is full of live data".into()));
            }
        }
    }

    /// The zone the cleaner relocates into; may take the reserve zone.
    pub(crate) fn gc_zone(&mut self) -> Result<u32> {
        if let Some(z) = self.active_gc {
            if self.pool.max_put(z) > 0 {
                return Ok(z);
            }
            self.active_gc = None;
        }
        let z = *self
            .empty_zones()
            .first()
            .ok_or_else(|| FsError::NoSpace("no empty zone left for cleaning".into()))?;
        self.active_gc = Some(z);
        Ok(z)
    }
}
