//! The files of a manifest `[[resource]]` root, read at `resources/read` time: confined
//! beneath the root directory airlock opened at load, whatever changed since.
//!
//! Trusts nothing of the tree: between the load and a read, anyone who can write under the
//! root may replace a listed file with a symbolic link, a FIFO or a device, or a directory on
//! its path with a link. Each read opens the file with `openat2(2)` beneath the root's
//! descriptor (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`, `O_NOFOLLOW`,
//! `O_NONBLOCK` so that a FIFO cannot hold the open), takes only a regular file with one name
//! (a hard link could be a file from outside the root under a listed name), and reads at
//! most its cap plus one byte. The path read is always one listed at load, never anything
//! of the peer's. A refusal is [`Unreadable`], which says why for the log and never reaches
//! the wire (the peer gets `resource not found`).

use std::io::Read as _;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{Mode, OFlags, ResolveFlags};

/// A resource root, held open as a directory since the load.
#[derive(Debug)]
pub struct Root {
    dir: OwnedFd,
}

/// Why a file could not be read; for the log only.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Unreadable {
    /// It could not be opened beneath the root without following a link (gone, a link on
    /// its path, or the kernel has no `openat2`).
    Open,
    /// It is no longer a regular file (a FIFO, a device, a directory).
    NotRegular,
    /// It has more than one name (a hard link): it may be a file from outside the root.
    Linked,
    /// It holds more than the cap.
    TooLarge,
    /// Reading it failed.
    Read,
}

impl Root {
    /// Opens `dir` (canonical) as a directory, refusing a symbolic link at any component.
    ///
    /// # Errors
    ///
    /// The OS error, for the load's message.
    pub fn open(dir: &Path) -> rustix::io::Result<Self> {
        let dir = rustix::fs::openat2(
            rustix::fs::CWD,
            dir,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )?;
        Ok(Self { dir })
    }

    /// The bytes of the regular file at `relative` beneath the root, at most `cap` of them.
    ///
    /// # Errors
    ///
    /// [`Unreadable`]: see the module's documentation.
    pub fn read(&self, relative: &Path, cap: usize) -> Result<Vec<u8>, Unreadable> {
        let file = rustix::fs::openat2(
            &self.dir,
            relative,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )
        .map_err(|_| Unreadable::Open)?;
        let stat = rustix::fs::fstat(&file).map_err(|_| Unreadable::Read)?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(Unreadable::NotRegular);
        }
        // A second name for the file: a hard link planted in place of a listed file, naming
        // a file elsewhere (a key of the user airlock runs as, on the same file system).
        if stat.st_nlink != 1 {
            return Err(Unreadable::Linked);
        }
        let size = usize::try_from(stat.st_size).unwrap_or(usize::MAX);
        if size > cap {
            return Err(Unreadable::TooLarge);
        }
        let limit = u64::try_from(cap.saturating_add(1)).unwrap_or(u64::MAX);
        let mut bytes = Vec::with_capacity(size.saturating_add(1));
        std::fs::File::from(file)
            .take(limit)
            .read_to_end(&mut bytes)
            .map_err(|_| Unreadable::Read)?;
        // It may have grown since `fstat`.
        if bytes.len() > cap {
            return Err(Unreadable::TooLarge);
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("airlock-files-{name}-{}", std::process::id()));
        let _stale = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("root/sub")).unwrap();
        dir
    }

    #[test]
    fn a_listed_file_is_read_and_a_link_fifo_or_oversized_file_is_refused() {
        let dir = scratch("read");
        let root_dir = dir.join("root");
        std::fs::write(root_dir.join("a.txt"), "hello").unwrap();
        std::fs::write(root_dir.join("sub/b.txt"), "bee").unwrap();
        std::fs::write(dir.join("outside"), "secret").unwrap();
        let root = Root::open(&root_dir).unwrap();
        assert_eq!(root.read(Path::new("a.txt"), 5).unwrap(), b"hello");
        assert_eq!(root.read(Path::new("sub/b.txt"), 5).unwrap(), b"bee");
        assert_eq!(root.read(Path::new("a.txt"), 4), Err(Unreadable::TooLarge));
        assert_eq!(root.read(Path::new("sub"), 5), Err(Unreadable::NotRegular));
        assert_eq!(
            root.read(Path::new("../outside"), 99),
            Err(Unreadable::Open)
        );
        assert_eq!(root.read(&dir.join("outside"), 99), Err(Unreadable::Open));
        std::fs::remove_file(root_dir.join("a.txt")).unwrap();
        std::os::unix::fs::symlink(dir.join("outside"), root_dir.join("a.txt")).unwrap();
        assert_eq!(root.read(Path::new("a.txt"), 99), Err(Unreadable::Open));
        std::fs::remove_dir_all(root_dir.join("sub")).unwrap();
        std::fs::create_dir(dir.join("elsewhere")).unwrap();
        std::fs::write(dir.join("elsewhere/b.txt"), "moved").unwrap();
        std::os::unix::fs::symlink(dir.join("elsewhere"), root_dir.join("sub")).unwrap();
        assert_eq!(root.read(Path::new("sub/b.txt"), 99), Err(Unreadable::Open));
        std::fs::write(root_dir.join("c.txt"), "sea").unwrap();
        std::fs::hard_link(dir.join("outside"), root_dir.join("hard.txt")).unwrap();
        assert_eq!(
            root.read(Path::new("hard.txt"), 99),
            Err(Unreadable::Linked)
        );
        assert_eq!(root.read(Path::new("c.txt"), 99).unwrap(), b"sea");
        let fifo = root_dir.join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert_eq!(
            root.read(Path::new("fifo"), 99),
            Err(Unreadable::NotRegular)
        );
        let _removed = std::fs::remove_dir_all(&dir);
    }
}
