//! The system calls of the pass-through mount, each returning the errno on failure.

use fuser::{FileAttr, FileType, TimeOrNow};
use std::ffi::{CString, OsStr};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The errno of the last failed call.
pub(super) fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn check(rc: libc::c_int) -> Result<(), i32> {
    if rc < 0 {
        Err(errno())
    } else {
        Ok(())
    }
}

/// A name as a C string (a name with a NUL byte cannot exist: `EINVAL`).
pub(super) fn cname(name: &OsStr) -> Result<CString, i32> {
    CString::new(name.as_bytes()).map_err(|_| libc::EINVAL)
}

/// The `/proc/self/fd` path of a descriptor (reopens an `O_PATH` descriptor).
pub(super) fn proc_path(fd: RawFd) -> CString {
    // A decimal number has no NUL byte.
    CString::new(format!("/proc/self/fd/{fd}")).unwrap_or_default()
}

fn owned(fd: libc::c_int) -> Result<OwnedFd, i32> {
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Raises the limit of open descriptors as far as this process may (one per known inode): a
/// privileged process (`CAP_SYS_RESOURCE`) raises both limits to the kernel's `fs.nr_open`,
/// any other its soft limit to its hard one. Returns the soft limit in force.
pub(super) fn raise_fd_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<libc::rlim_t>().ok());
    // SAFETY: plain calls on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 0;
        }
        if let Some(n) = nr_open.filter(|&n| n > r.rlim_max) {
            let up = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &up) == 0 {
                return n;
            }
        }
        if r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        }
    }
    r.rlim_cur
}

/// An `O_PATH` descriptor of a host path.
pub(super) fn open_path(p: &Path) -> std::io::Result<OwnedFd> {
    let c = CString::new(p.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a valid C string.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    owned(fd).map_err(std::io::Error::from_raw_os_error)
}

/// An `O_PATH` descriptor of `name` in directory `dir`, not following a symlink.
pub(super) fn open_at(dir: RawFd, name: &CString) -> Result<OwnedFd, i32> {
    // SAFETY: a valid descriptor number and C string.
    owned(unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    })
}

/// Opens the file an `O_PATH` descriptor names, for I/O.
pub(super) fn reopen(fd: RawFd, flags: i32) -> Result<OwnedFd, i32> {
    let p = proc_path(fd);
    let flags = (flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_NOCTTY | libc::O_NOFOLLOW))
        | libc::O_CLOEXEC;
    // SAFETY: a valid C string.
    owned(unsafe { libc::open(p.as_ptr(), flags) })
}

/// Creates and opens `name` in `dir`.
pub(super) fn create_at(dir: RawFd, name: &CString, flags: i32, mode: u32) -> Result<OwnedFd, i32> {
    let flags = (flags | libc::O_CREAT | libc::O_CLOEXEC) & !libc::O_NOFOLLOW;
    // SAFETY: a valid descriptor number and C string.
    owned(unsafe { libc::openat(dir, name.as_ptr(), flags, mode as libc::c_uint) })
}

/// `fstatat(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)`.
pub(super) fn stat(fd: RawFd) -> Result<libc::stat, i32> {
    // SAFETY: zeroed stat is a valid value to be overwritten; the path is a static C string.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        check(libc::fstatat(
            fd,
            c"".as_ptr(),
            &mut st,
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        ))?;
        Ok(st)
    }
}

fn time(s: i64, ns: i64) -> SystemTime {
    if s >= 0 {
        UNIX_EPOCH + Duration::new(s as u64, ns.clamp(0, 999_999_999) as u32)
    } else {
        UNIX_EPOCH
    }
}

/// The kind of a host file mode.
pub(super) fn kind(mode: u32) -> FileType {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFIFO => FileType::NamedPipe,
        libc::S_IFSOCK => FileType::Socket,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        _ => FileType::RegularFile,
    }
}

/// fuser's attributes of a host stat, as inode `ino`.
pub(super) fn attr(ino: u64, st: &libc::stat) -> FileAttr {
    FileAttr {
        ino,
        size: st.st_size as u64,
        blocks: st.st_blocks as u64,
        atime: time(st.st_atime, st.st_atime_nsec),
        mtime: time(st.st_mtime, st.st_mtime_nsec),
        ctime: time(st.st_ctime, st.st_ctime_nsec),
        crtime: time(st.st_ctime, st.st_ctime_nsec),
        kind: kind(st.st_mode),
        perm: (st.st_mode & 0o7777) as u16,
        nlink: st.st_nlink as u32,
        uid: st.st_uid,
        gid: st.st_gid,
        rdev: st.st_rdev as u32,
        blksize: st.st_blksize as u32,
        flags: 0,
    }
}

fn timespec(t: Option<TimeOrNow>) -> libc::timespec {
    match t {
        None => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        Some(TimeOrNow::Now) => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_NOW,
        },
        Some(TimeOrNow::SpecificTime(t)) => {
            let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
            libc::timespec {
                tv_sec: d.as_secs() as libc::time_t,
                tv_nsec: d.subsec_nanos() as libc::c_long,
            }
        }
    }
}

/// Changes the attributes of the file an `O_PATH` descriptor names (`file`: an open
/// descriptor of it, when the kernel gave a handle). The arguments are FUSE's SETATTR.
#[allow(clippy::too_many_arguments)]
pub(super) fn setattr(
    fd: RawFd,
    file: Option<RawFd>,
    mode: Option<u32>,
    uid: Option<u32>,
    gid: Option<u32>,
    size: Option<u64>,
    atime: Option<TimeOrNow>,
    mtime: Option<TimeOrNow>,
) -> Result<(), i32> {
    let p = proc_path(fd);
    // SAFETY: valid descriptors and C strings throughout.
    unsafe {
        if let Some(m) = mode {
            match file {
                Some(f) => check(libc::fchmod(f, m as libc::mode_t))?,
                None => check(libc::chmod(p.as_ptr(), m as libc::mode_t))?,
            }
        }
        if uid.is_some() || gid.is_some() {
            check(libc::fchownat(
                fd,
                c"".as_ptr(),
                uid.unwrap_or(u32::MAX),
                gid.unwrap_or(u32::MAX),
                libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
            ))?;
        }
        if let Some(s) = size {
            match file {
                Some(f) => check(libc::ftruncate(f, s as libc::off_t))?,
                None => check(libc::truncate(p.as_ptr(), s as libc::off_t))?,
            }
        }
        if atime.is_some() || mtime.is_some() {
            let ts = [timespec(atime), timespec(mtime)];
            match file {
                Some(f) => check(libc::futimens(f, ts.as_ptr()))?,
                None => check(libc::utimensat(libc::AT_FDCWD, p.as_ptr(), ts.as_ptr(), 0))?,
            }
        }
    }
    Ok(())
}

/// The target of a symlink.
pub(super) fn readlink(fd: RawFd) -> Result<Vec<u8>, i32> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: the buffer is as long as we say.
    let n = unsafe {
        libc::readlinkat(
            fd,
            c"".as_ptr(),
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
        )
    };
    if n < 0 {
        return Err(errno());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// Makes a node (`mknod`), directory or symlink named `name` in `dir`, owned by
/// `uid`/`gid`, with permissions `perm` (not reduced by this process's umask).
pub(super) fn make(
    dir: RawFd,
    name: &CString,
    what: Make<'_>,
    perm: u32,
    uid: u32,
    gid: u32,
) -> Result<(), i32> {
    // SAFETY: valid descriptors and C strings.
    unsafe {
        match what {
            Make::Node { mode, rdev } => check(libc::mknodat(
                dir,
                name.as_ptr(),
                mode as libc::mode_t,
                rdev as libc::dev_t,
            ))?,
            Make::Dir => check(libc::mkdirat(dir, name.as_ptr(), perm as libc::mode_t))?,
            Make::Symlink(t) => check(libc::symlinkat(t.as_ptr(), dir, name.as_ptr()))?,
        }
        if !matches!(what, Make::Symlink(_)) {
            check(libc::fchmodat(dir, name.as_ptr(), perm as libc::mode_t, 0))?;
        }
        check(libc::fchownat(
            dir,
            name.as_ptr(),
            uid,
            gid,
            libc::AT_SYMLINK_NOFOLLOW,
        ))
    }
}

/// What [`make`] makes.
pub(super) enum Make<'a> {
    /// A file, FIFO, socket or device node (`mode` with its type bits).
    Node {
        /// Type and permission bits.
        mode: u32,
        /// Device number.
        rdev: u32,
    },
    /// A directory.
    Dir,
    /// A symlink to this target.
    Symlink(&'a CString),
}

/// Removes `name` from `dir` (`AT_REMOVEDIR` for a directory).
pub(super) fn unlink(dir: RawFd, name: &CString, rmdir: bool) -> Result<(), i32> {
    let flags = if rmdir { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: a valid descriptor and C string.
    check(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) })
}

/// `renameat2`.
pub(super) fn rename(
    dir: RawFd,
    name: &CString,
    new_dir: RawFd,
    new_name: &CString,
    flags: u32,
) -> Result<(), i32> {
    // SAFETY: valid descriptors and C strings.
    check(unsafe { libc::renameat2(dir, name.as_ptr(), new_dir, new_name.as_ptr(), flags) })
}

/// A hard link to the file an `O_PATH` descriptor names.
pub(super) fn link(fd: RawFd, new_dir: RawFd, new_name: &CString) -> Result<(), i32> {
    let p = proc_path(fd);
    // SAFETY: valid descriptors and C strings.
    check(unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            p.as_ptr(),
            new_dir,
            new_name.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    })
}

/// `pread` of up to `n` bytes.
pub(super) fn pread(fd: RawFd, off: u64, n: usize) -> Result<Vec<u8>, i32> {
    let mut buf = vec![0u8; n];
    // SAFETY: the buffer is as long as we say.
    let got = unsafe {
        libc::pread(
            fd,
            buf.as_mut_ptr() as *mut libc::c_void,
            n,
            off as libc::off_t,
        )
    };
    if got < 0 {
        return Err(errno());
    }
    buf.truncate(got as usize);
    Ok(buf)
}

/// `pwrite` of all of `data`.
pub(super) fn pwrite(fd: RawFd, off: u64, data: &[u8]) -> Result<usize, i32> {
    let mut done = 0;
    while done < data.len() {
        // SAFETY: the slice is valid for its length.
        let n = unsafe {
            libc::pwrite(
                fd,
                data[done..].as_ptr() as *const libc::c_void,
                data.len() - done,
                (off + done as u64) as libc::off_t,
            )
        };
        if n < 0 {
            return Err(errno());
        }
        if n == 0 {
            break;
        }
        done += n as usize;
    }
    Ok(done)
}

/// `fsync` or `fdatasync`.
pub(super) fn fsync(fd: RawFd, datasync: bool) -> Result<(), i32> {
    // SAFETY: a plain call on a descriptor.
    check(unsafe {
        if datasync {
            libc::fdatasync(fd)
        } else {
            libc::fsync(fd)
        }
    })
}

/// `fallocate`.
pub(super) fn fallocate(fd: RawFd, mode: i32, off: i64, len: i64) -> Result<(), i32> {
    // SAFETY: a plain call on a descriptor.
    check(unsafe { libc::fallocate(fd, mode, off as libc::off_t, len as libc::off_t) })
}

/// `statvfs` of the file system holding `fd`.
pub(super) fn statvfs(fd: RawFd) -> Result<libc::statvfs, i32> {
    let p = proc_path(fd);
    // SAFETY: zeroed statvfs is a valid value to be overwritten.
    unsafe {
        let mut s: libc::statvfs = std::mem::zeroed();
        check(libc::statvfs(p.as_ptr(), &mut s))?;
        Ok(s)
    }
}

/// Opens a directory stream of the directory an `O_PATH` descriptor names.
pub(super) fn opendir(fd: RawFd) -> Result<*mut libc::DIR, i32> {
    let d = reopen(fd, libc::O_RDONLY | libc::O_DIRECTORY)?;
    use std::os::fd::IntoRawFd;
    let raw = d.into_raw_fd();
    // SAFETY: `raw` is an open directory descriptor whose ownership passes to the stream.
    let dir = unsafe { libc::fdopendir(raw) };
    if dir.is_null() {
        let e = errno();
        // SAFETY: fdopendir failed, so the descriptor is still ours to close.
        unsafe {
            libc::close(raw);
        }
        return Err(e);
    }
    Ok(dir)
}

/// Reads a directory stream from `offset`, handing each entry (inode, next offset, kind,
/// name) to `emit` until it returns true (full).
pub(super) fn readdir(
    dir: *mut libc::DIR,
    offset: i64,
    mut emit: impl FnMut(u64, i64, FileType, &OsStr) -> bool,
) -> Result<(), i32> {
    // SAFETY: `dir` is an open stream used by one thread at a time; entries are read before
    // the next call.
    unsafe {
        if offset == 0 {
            libc::rewinddir(dir);
        } else {
            libc::seekdir(dir, offset as libc::c_long);
        }
        loop {
            *libc::__errno_location() = 0;
            let e = libc::readdir(dir);
            if e.is_null() {
                let err = errno();
                return if *libc::__errno_location() == 0 {
                    Ok(())
                } else {
                    Err(err)
                };
            }
            let e = &*e;
            let name = std::ffi::CStr::from_ptr(e.d_name.as_ptr());
            let kind = match e.d_type {
                libc::DT_DIR => FileType::Directory,
                libc::DT_LNK => FileType::Symlink,
                libc::DT_FIFO => FileType::NamedPipe,
                libc::DT_SOCK => FileType::Socket,
                libc::DT_CHR => FileType::CharDevice,
                libc::DT_BLK => FileType::BlockDevice,
                _ => FileType::RegularFile,
            };
            if emit(e.d_ino, e.d_off, kind, OsStr::from_bytes(name.to_bytes())) {
                return Ok(());
            }
        }
    }
}
