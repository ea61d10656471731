//! Scratch directories (one per test, removed when dropped) and the files written into them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::support::stdio::{Server, airlock, spawn_command};

/// A directory of this test process under the system's temporary directory, emptied when
/// created (a stale one from a killed run is removed) and removed when dropped.
pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// `airlock-it-<name>-<pid>`; `name` says which module and test it is for.
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("airlock-it-{name}-{}", std::process::id()));
        let _stale = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the scratch directory");
        Self {
            dir: dir.canonicalize().expect("canonical scratch path"),
        }
    }

    /// The directory (canonical, so a sandbox grant on it matches what the kernel sees).
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// `relative` below the directory.
    pub fn join(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }

    /// `relative` below the directory, as a string for an argument.
    pub fn arg(&self, relative: &str) -> String {
        self.join(relative)
            .to_str()
            .expect("a UTF-8 path")
            .to_owned()
    }

    /// Creates directory `relative` (and its parents) and returns its path.
    pub fn dir(&self, relative: &str) -> PathBuf {
        let path = self.join(relative);
        std::fs::create_dir_all(&path).expect("create a scratch subdirectory");
        path
    }

    /// Writes `text` to `relative` (creating its directory) and returns its path.
    pub fn write(&self, relative: &str, text: impl AsRef<[u8]>) -> PathBuf {
        let path = self.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create a scratch subdirectory");
        }
        std::fs::write(&path, text).expect("write a scratch file");
        path
    }

    /// Writes `text` as `tools.toml` and returns its path as an argument.
    pub fn manifest(&self, text: &str) -> String {
        self.write("tools.toml", text)
            .to_str()
            .expect("a UTF-8 path")
            .to_owned()
    }

    /// Serves `manifest` (a text, written as `tools.toml`) on stdio with `env`, handshake done.
    pub fn serve(&self, manifest: &str, env: &[(&str, &str)]) -> Server {
        let path = self.manifest(manifest);
        let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &path], env);
        server.initialize("2025-11-25");
        server
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _removed = std::fs::remove_dir_all(&self.dir);
    }
}

/// A tree for `airlock serve`'s own checks: `root/` with files, a link out of it
/// (`root/escape`) and one to `/etc` (`root/sub/etc`), and `outside.txt` beside it; removed on
/// drop.
pub struct ServeTree {
    pub dir: PathBuf,
}

impl ServeTree {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("airlock-it-{name}-{}", std::process::id()));
        let _stale = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("root/sub")).unwrap();
        std::fs::write(dir.join("root/hello.txt"), "hello from inside\n").unwrap();
        std::fs::write(dir.join("root/-rf"), "a file named like an option\n").unwrap();
        std::fs::write(dir.join("outside.txt"), "outside secret\n").unwrap();
        std::os::unix::fs::symlink(dir.join("outside.txt"), dir.join("root/escape")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.join("root/sub/etc")).unwrap();
        Self { dir }
    }

    pub fn manifest(&self, text: &str) -> PathBuf {
        let path = self.dir.join("tools.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Serves `manifest`; the attack manifest's secret gets a value unless `env` sets one.
    pub fn serve(&self, manifest: &Path, env: &[(&str, &str)]) -> Server {
        let manifest = manifest.to_str().unwrap().to_owned();
        let mut env = env.to_vec();
        if !env.iter().any(|(key, _)| *key == "AIRLOCK_IT_SECRET") {
            env.push(("AIRLOCK_IT_SECRET", "a-default-test-secret"));
        }
        let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &manifest], &env);
        server.initialize("2025-11-25");
        server
    }
}

impl Drop for ServeTree {
    fn drop(&mut self) {
        let _removed = std::fs::remove_dir_all(&self.dir);
    }
}

/// A scratch tree: `tools.toml`, the tools' workdir `work/` (with `work/out/` writable when a
/// manifest says so) and a sibling `outside/` holding secrets no tool may read.
pub struct SandboxTree {
    pub dir: PathBuf,
    /// Text of `outside/secret.txt`.
    pub secret: String,
    /// File systems mounted in the tree (`private_filesystem`), unmounted before it goes.
    mounts: Vec<PathBuf>,
}

impl SandboxTree {
    pub fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("airlock-it-sandbox-{name}-{}", std::process::id()));
        let _stale = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("work/out")).unwrap();
        std::fs::create_dir_all(dir.join("work/data")).unwrap();
        std::fs::create_dir_all(dir.join("outside")).unwrap();
        let secret = format!("TOPSECRET-outside-{}", unique());
        std::fs::write(dir.join("outside/secret.txt"), format!("{secret}\n")).unwrap();
        std::fs::write(dir.join("work/inside.txt"), "inside-file\n").unwrap();
        Self {
            dir,
            secret,
            mounts: Vec::new(),
        }
    }

    /// Mounts a `tmpfs` of `mib` MiB on `relative` (when the tests run as root), so that what
    /// a call adds there is all its file system grows by: the disk budget counts a writable
    /// directory's file system, and other tests write and delete on the shared one at once.
    pub fn private_filesystem(&mut self, relative: &str, mib: u64) {
        if !rustix::process::getuid().is_root() {
            eprintln!("not root: {relative} stays on the shared file system");
            return;
        }
        let dir = self.dir.join(relative);
        let status = spawn_command(Path::new("/usr/bin/mount"))
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size={mib}m"))
            .args(["tmpfs"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(status.success(), "mount tmpfs on {}", dir.display());
        self.mounts.push(dir);
    }

    pub fn work(&self) -> PathBuf {
        self.dir.join("work")
    }

    pub fn outside(&self) -> PathBuf {
        self.dir.join("outside")
    }

    /// Writes the manifest, checks it with `airlock check` (so a refused manifest fails with
    /// its reason, not a closed pipe) and returns its path.
    pub fn manifest(&self, text: &str) -> String {
        let path = self.dir.join("tools.toml");
        std::fs::write(&path, text).unwrap();
        let path = path.to_str().unwrap().to_owned();
        let output = crate::support::stdio::run(&airlock(), &["check", "--manifest", &path], &[]);
        assert!(
            output.status.success(),
            "airlock check refused the manifest:\n{}\n{text}",
            String::from_utf8_lossy(&output.stderr)
        );
        path
    }

    /// Serves `manifest` (a text) with `env`, handshake done.
    pub fn serve(&self, manifest: &str, env: &[(&str, &str)]) -> Server {
        let path = self.manifest(manifest);
        let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &path], env);
        server.initialize("2025-11-25");
        server
    }
}

impl Drop for SandboxTree {
    fn drop(&mut self) {
        for dir in &self.mounts {
            let _unmounted = spawn_command(Path::new("/usr/bin/umount"))
                .arg("--lazy")
                .arg(dir)
                .status();
        }
        let _removed = std::fs::remove_dir_all(&self.dir);
    }
}

/// Digits no other run or call of this suite uses (a marker for processes and secrets).
pub fn unique() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{}{:03}{:09}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        nanos
    )
}
