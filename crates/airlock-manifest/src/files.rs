//! The files of a manifest `[[resource]]` root, read at `resources/read` time: confined
//! beneath the root directory airlock opened at load, whatever changed since.
//!
//! Trusts nothing of the tree: between the load and a read, anyone who can write under the
//! root may replace a listed file with a symbolic link, a FIFO or a device, or a directory on
//! its path with a link. Each read opens the file with `openat2(2)` beneath the root's
//! descriptor (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
//! RESOLVE_NO_XDEV`: no mount point inside the root is crossed; `O_NOFOLLOW`,
//! `O_NONBLOCK` so that a FIFO cannot hold the open), takes only a regular file with one name
//! (a hard link could be a file from outside the root under a listed name), and reads at
//! most its cap plus one byte; and only the file listed at load: its device and inode are
//! pinned then, so a file renamed over a listed name since (a dot-file of the root, a file
//! moved in from elsewhere) is refused, as is the listed file replaced by a new one (an
//! editor or `git` writing by rename): like a file added after start, it is served after a
//! restart. The path read is always one listed at load, never anything of the peer's. A
//! refusal is [`Unreadable`], which says why for the log and never reaches the wire (the
//! peer gets `resource not found`).
//!
//! The listing at load walks the tree the same way: each directory is opened beneath the
//! root's descriptor without following a link, so a directory swapped for a link while the
//! walk runs is never listed through ([`Root::entries`]).

use std::io::Read as _;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat};

/// A resource root, held open as a directory since the load.
#[derive(Debug)]
pub struct Root {
    dir: OwnedFd,
}

/// How every path beneath the root is resolved: never above it, through no symbolic or magic
/// link, and never across a mount point (a FUSE or network file system mounted inside the
/// root could stall a read; what is mounted there was not what the operator listed).
const BENEATH_THE_ROOT: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS)
    .union(ResolveFlags::NO_XDEV);

/// Which file a listed name named at load: its device and inode.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    #[cfg_attr(
        target_os = "linux",
        expect(
            clippy::useless_conversion,
            reason = "`u64` already on Linux; other systems' `stat` fields are narrower"
        )
    )]
    fn of(stat: &Stat) -> Self {
        Self {
            dev: u64::from(stat.st_dev),
            ino: u64::from(stat.st_ino),
        }
    }
}

/// One entry of a directory beneath the root, as the walk at load sees it (its own type: a
/// link is a link).
#[derive(Clone, Debug, Eq, PartialEq)]
pub enum Entry {
    /// A regular file, with its identity.
    File(String, FileId),
    /// A directory.
    Dir(String),
    /// Anything else (a link, a FIFO, a device, a socket), or a name that is not UTF-8.
    Other,
}

/// Why a directory could not be listed; for the load's message.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Unlisted {
    /// It could not be opened beneath the root without following a link, or read.
    Io(rustix::io::Errno),
    /// It holds more entries than the walk may look at.
    TooMany,
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
    /// It is not the file listed at load (another device or inode): renamed over the listed
    /// name, or the listed file replaced.
    Replaced,
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

    /// The entries of the directory at `relative` beneath the root (`""`: the root), at most
    /// `budget` of them (each one counts it down), `.` and `..` left out. The directory is
    /// opened beneath the root's descriptor without following a link at any component.
    ///
    /// # Errors
    ///
    /// [`Unlisted`]: it cannot be opened so or read, or it holds more than `budget` entries.
    pub fn entries(&self, relative: &Path, budget: &mut usize) -> Result<Vec<Entry>, Unlisted> {
        let at = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        let dir = rustix::fs::openat2(
            &self.dir,
            at,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            BENEATH_THE_ROOT,
        )
        .map_err(Unlisted::Io)?;
        let mut listing = rustix::fs::Dir::read_from(&dir).map_err(Unlisted::Io)?;
        let mut entries = Vec::new();
        while let Some(entry) = listing.read() {
            let entry = entry.map_err(Unlisted::Io)?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            *budget = budget.checked_sub(1).ok_or(Unlisted::TooMany)?;
            let Ok(name) = std::str::from_utf8(name).map(str::to_owned) else {
                entries.push(Entry::Other);
                continue;
            };
            // The entry's own type, from the directory's descriptor: never through a link.
            let Ok(stat) = rustix::fs::statat(&dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
            else {
                entries.push(Entry::Other);
                continue;
            };
            entries.push(match FileType::from_raw_mode(stat.st_mode) {
                FileType::RegularFile => Entry::File(name, FileId::of(&stat)),
                FileType::Directory => Entry::Dir(name),
                _ => Entry::Other,
            });
        }
        Ok(entries)
    }

    /// The bytes of the regular file at `relative` beneath the root, at most `cap` of them,
    /// if it is still the file `listed` (its identity at load).
    ///
    /// # Errors
    ///
    /// [`Unreadable`]: see the module's documentation.
    pub fn read(&self, relative: &Path, listed: FileId, cap: usize) -> Result<Vec<u8>, Unreadable> {
        let file = rustix::fs::openat2(
            &self.dir,
            relative,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
            BENEATH_THE_ROOT,
        )
        .map_err(|_| Unreadable::Open)?;
        let stat = rustix::fs::fstat(&file).map_err(|_| Unreadable::Read)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(Unreadable::NotRegular);
        }
        // A second name for the file: a hard link planted in place of a listed file, naming
        // a file elsewhere (a key of the user airlock runs as, on the same file system).
        if stat.st_nlink != 1 {
            return Err(Unreadable::Linked);
        }
        if FileId::of(&stat) != listed {
            return Err(Unreadable::Replaced);
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

    /// The identity of `name` in the root's top directory, as the walk at load sees it.
    fn id(root: &Root, name: &str) -> FileId {
        let mut budget = 100;
        root.entries(Path::new(""), &mut budget)
            .unwrap()
            .into_iter()
            .find_map(|entry| match entry {
                Entry::File(found, id) if found == name => Some(id),
                _ => None,
            })
            .unwrap()
    }

    #[test]
    fn a_listed_file_is_read_and_a_link_fifo_or_oversized_file_is_refused() {
        let dir = scratch("read");
        let root_dir = dir.join("root");
        std::fs::write(root_dir.join("a.txt"), "hello").unwrap();
        std::fs::write(root_dir.join("sub/b.txt"), "bee").unwrap();
        std::fs::write(dir.join("outside"), "secret").unwrap();
        let root = Root::open(&root_dir).unwrap();
        let a = id(&root, "a.txt");
        let mut budget = 100;
        let b = match root
            .entries(Path::new("sub"), &mut budget)
            .unwrap()
            .as_slice()
        {
            [Entry::File(name, b)] if name == "b.txt" => *b,
            other => panic!("{other:?}"),
        };
        assert_eq!(root.read(Path::new("a.txt"), a, 5).unwrap(), b"hello");
        assert_eq!(root.read(Path::new("sub/b.txt"), b, 5).unwrap(), b"bee");
        assert_eq!(
            root.read(Path::new("sub/b.txt"), a, 5),
            Err(Unreadable::Replaced)
        );
        assert_eq!(
            root.read(Path::new("a.txt"), a, 4),
            Err(Unreadable::TooLarge)
        );
        assert_eq!(
            root.read(Path::new("sub"), a, 5),
            Err(Unreadable::NotRegular)
        );
        assert_eq!(
            root.read(Path::new("../outside"), a, 99),
            Err(Unreadable::Open)
        );
        assert_eq!(
            root.read(&dir.join("outside"), a, 99),
            Err(Unreadable::Open)
        );
        std::fs::remove_file(root_dir.join("a.txt")).unwrap();
        std::os::unix::fs::symlink(dir.join("outside"), root_dir.join("a.txt")).unwrap();
        assert_eq!(root.read(Path::new("a.txt"), a, 99), Err(Unreadable::Open));
        std::fs::remove_dir_all(root_dir.join("sub")).unwrap();
        std::fs::create_dir(dir.join("elsewhere")).unwrap();
        std::fs::write(dir.join("elsewhere/b.txt"), "moved").unwrap();
        std::os::unix::fs::symlink(dir.join("elsewhere"), root_dir.join("sub")).unwrap();
        assert_eq!(
            root.read(Path::new("sub/b.txt"), b, 99),
            Err(Unreadable::Open)
        );
        std::fs::write(root_dir.join("c.txt"), "sea").unwrap();
        let c = id(&root, "c.txt");
        std::fs::hard_link(dir.join("outside"), root_dir.join("hard.txt")).unwrap();
        assert_eq!(
            root.read(Path::new("hard.txt"), c, 99),
            Err(Unreadable::Linked)
        );
        assert_eq!(root.read(Path::new("c.txt"), c, 99).unwrap(), b"sea");
        // Written in place: the same file. Renamed over: another one, refused.
        std::fs::write(root_dir.join("c.txt"), "seas").unwrap();
        assert_eq!(root.read(Path::new("c.txt"), c, 99).unwrap(), b"seas");
        std::fs::write(root_dir.join(".env"), "dot-secret").unwrap();
        std::fs::rename(root_dir.join(".env"), root_dir.join("c.txt")).unwrap();
        assert_eq!(
            root.read(Path::new("c.txt"), c, 99),
            Err(Unreadable::Replaced)
        );
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
            root.read(Path::new("fifo"), c, 99),
            Err(Unreadable::NotRegular)
        );
        let _removed = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_walk_lists_entries_by_their_own_type_and_never_through_a_link() {
        let dir = scratch("entries");
        let root_dir = dir.join("root");
        std::fs::write(root_dir.join("a.txt"), "a").unwrap();
        std::fs::create_dir(dir.join("outside")).unwrap();
        std::fs::write(dir.join("outside/secret-name.txt"), "s").unwrap();
        std::os::unix::fs::symlink(dir.join("outside"), root_dir.join("link")).unwrap();
        let root = Root::open(&root_dir).unwrap();
        let mut budget = 100;
        let mut entries = root.entries(Path::new(""), &mut budget).unwrap();
        entries.sort_by_key(|entry| format!("{entry:?}"));
        assert!(
            matches!(entries.as_slice(),
            [Entry::Dir(sub), Entry::File(a, _), Entry::Other] if sub == "sub" && a == "a.txt"),
            "{entries:?}"
        );
        assert_eq!(budget, 97);
        assert!(matches!(
            root.entries(Path::new("link"), &mut budget),
            Err(Unlisted::Io(_))
        ));
        // A directory swapped for a link after its parent was read is refused, not followed.
        std::fs::remove_dir(root_dir.join("sub")).unwrap();
        std::os::unix::fs::symlink(dir.join("outside"), root_dir.join("sub")).unwrap();
        assert!(matches!(
            root.entries(Path::new("sub"), &mut budget),
            Err(Unlisted::Io(_))
        ));
        let mut small = 1;
        assert_eq!(
            root.entries(Path::new(""), &mut small),
            Err(Unlisted::TooMany)
        );
        let _removed = std::fs::remove_dir_all(&dir);
    }
}
