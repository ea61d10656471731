//! Finding what a manifest names on this machine, once, when it loads: programs (by path, or
//! by name in airlock's `PATH`) and directories. Nothing is looked up again at call time.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// `relative` under `base`, canonical, if it is an existing directory.
pub(crate) fn directory(base: &Path, relative: &str) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(base.join(relative)).ok()?;
    dir.is_dir().then_some(dir)
}

/// Why `program` cannot be run, and how to fix it: where it was looked for.
pub(crate) fn program_not_found(program: &str, base: &Path) -> ProgramNotFound {
    if program.contains('/') {
        let path = base.join(program);
        let found = if path.is_file() {
            "exists but is not executable (chmod +x it)"
        } else if path.exists() {
            "is not a regular file"
        } else {
            "does not exist"
        };
        return ProgramNotFound::AtPath {
            path,
            found,
            base: (!Path::new(program).is_absolute()).then(|| base.to_path_buf()),
        };
    }
    ProgramNotFound::NotInPath {
        program: program.to_owned(),
        base: base.to_path_buf(),
    }
}

/// A manifest's program that cannot be run: where it was looked for, and how to fix it.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProgramNotFound {
    /// A program named by a path (with a `/`).
    #[error(
        "the program {} {found}{}; a bare name is looked up in PATH",
        .path.display(),
        relative(.base.as_deref())
    )]
    AtPath {
        /// The path, joined to the manifest's directory.
        path: PathBuf,
        /// What is there instead.
        found: &'static str,
        /// The manifest's directory, when the path was relative to it.
        base: Option<PathBuf>,
    },
    /// A bare name not found in `PATH`.
    #[error(
        "the program `{program}` was not found in airlock's PATH (searched when the manifest \
         loads, absolute entries only); install it, or give its absolute path (command = \
         [\"/path/to/{program}\", …]); a path with a `/` is taken relative to the manifest's \
         directory, {}",
        .base.display()
    )]
    NotInPath {
        /// The name.
        program: String,
        /// The manifest's directory.
        base: PathBuf,
    },
}

/// Where a relative program path was taken from, for [`ProgramNotFound::AtPath`].
fn relative(base: Option<&Path>) -> String {
    base.map_or_else(String::new, |base| {
        format!(
            " (a program with a `/` is taken relative to the manifest's directory, {})",
            base.display()
        )
    })
}

/// Finds the program now, once: a path with `/` is taken relative to `base`; a bare name is
/// looked up in airlock's `PATH` (absolute entries only: a relative entry would make the
/// result depend on the working directory). The result must be an executable regular file.
pub(crate) fn resolve_program(program: &str, base: &Path) -> Option<PathBuf> {
    let executable = |path: &Path| {
        std::fs::metadata(path)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = base.join(program);
        return executable(&path).then_some(path);
    }
    if program.is_empty() {
        return None;
    }
    let search = std::env::var_os("PATH")?;
    std::env::split_paths(&search)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate))
}
