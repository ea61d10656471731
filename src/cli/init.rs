//! `airlock init [DIR]`: a commented starter manifest and its JSON Schema, written next to each
//! other, never over an existing file.
//!
//! The manifest (`init.toml`, embedded) holds the default tools, one argument of each type,
//! the sandbox keys and `[defaults]`, and passes `airlock check` on a Linux machine with
//! coreutils and grep (tested). Its tools work in DIR, so a DIR that is no directory to serve
//! whole (`/`, the home directory or one holding it, a system tree) is refused, as the
//! embedded default manifest refuses it, before anything is created. What it creates no other
//! user can change, whatever the umask (files 0644, directories 0755): the manifest decides
//! what airlock runs.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use airlock_manifest::manifest;

/// The starter manifest.
pub(crate) const STARTER: &str = include_str!("init.toml");

/// Why `airlock init` wrote nothing (or, past the checks, not everything).
#[derive(Debug, thiserror::Error)]
pub(crate) enum InitError {
    /// The directory is no project to serve whole.
    #[error(
        "will not write a manifest serving {}: {why}. Run it in (or name) the project's \
         directory: airlock init my-project",
        .full.display()
    )]
    Unsafe {
        /// The directory, resolved.
        full: PathBuf,
        /// What it is.
        why: &'static str,
    },
    /// Where the directory is cannot be found.
    #[error("cannot resolve {}: {kind}", .path.display())]
    Resolve {
        /// The directory as given.
        path: PathBuf,
        /// Why.
        kind: std::io::ErrorKind,
    },
    /// A directory or file cannot be created.
    #[error("cannot create {}: {kind}", .path.display())]
    Create {
        /// What was to be created.
        path: PathBuf,
        /// Why.
        kind: std::io::ErrorKind,
    },
    /// A file cannot be written.
    #[error("cannot write {}: {kind}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        kind: std::io::ErrorKind,
    },
    /// The manifest or the schema is there already.
    #[error(
        "{} already exists; not overwritten (move it away, or run airlock init in another \
         directory)",
        .0.display()
    )]
    Exists(PathBuf),
}

/// What `airlock init` wrote, or why it wrote nothing.
pub(crate) fn run(dir: &Path, manifest_name: &str) -> Result<String, InitError> {
    // Refused before anything is created: a refused `airlock init /etc/new` leaves no
    // `/etc/new` behind.
    refuse_unsafe(&resolved_before_creating(dir)?)?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|error| InitError::Create {
            path: dir.to_path_buf(),
            kind: error.kind(),
        })?;
    let full = std::fs::canonicalize(dir).map_err(|error| InitError::Resolve {
        path: dir.to_path_buf(),
        kind: error.kind(),
    })?;
    refuse_unsafe(&full)?;
    let manifest_path = dir.join(manifest_name);
    let schema_path = dir.join(manifest::SCHEMA_FILE);
    // Both checked first, so that nothing is written when either is there.
    for path in [&manifest_path, &schema_path] {
        if path.symlink_metadata().is_ok() {
            return Err(InitError::Exists(path.clone()));
        }
    }
    write_new(&schema_path, &manifest::json_schema())?;
    write_new(&manifest_path, STARTER)?;
    Ok(format!(
        "wrote {manifest} (a starter manifest) and {schema} (its JSON Schema, for editors)\n\
         next: edit {manifest}, then\n  airlock check {manifest}\n  airlock serve {manifest}\n",
        manifest = manifest_path.display(),
        schema = schema_path.display(),
    ))
}

/// The mode of the files written: the manifest decides what airlock runs, so no other user
/// may change it, whatever the umask (which can only take more away).
const FILE_MODE: u32 = 0o644;

/// The mode of the directories created, for the same reason: a directory another user can
/// write lets them replace the manifest.
const DIR_MODE: u32 = 0o755;

/// The refusal of a directory that is no project to serve whole, if `full` is one.
fn refuse_unsafe(full: &Path) -> Result<(), InitError> {
    match manifest::unsafe_root(full) {
        Some(why) => Err(InitError::Unsafe {
            full: full.to_path_buf(),
            why,
        }),
        None => Ok(()),
    }
}

/// Where `dir` will be once created: its nearest existing ancestor resolved (symbolic links
/// followed), then the missing components, which are plain directories yet to be made (`.`
/// skipped, `..` taking the one before back, as creating them would).
fn resolved_before_creating(dir: &Path) -> Result<PathBuf, InitError> {
    let resolve = |error: std::io::Error| InitError::Resolve {
        path: dir.to_path_buf(),
        kind: error.kind(),
    };
    let absolute = std::path::absolute(dir).map_err(resolve)?;
    let mut missing = Vec::new();
    let mut existing = absolute.as_path();
    while existing.symlink_metadata().is_err() {
        let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
            break;
        };
        missing.push(name.to_owned());
        existing = parent;
    }
    let mut full = std::fs::canonicalize(existing).map_err(resolve)?;
    for name in missing.iter().rev() {
        full.push(name);
    }
    // `absolute` keeps `..`; components past the existing ancestor are resolved by hand.
    let mut normal = PathBuf::new();
    for component in full.components() {
        match component {
            std::path::Component::ParentDir => {
                normal.pop();
            }
            std::path::Component::CurDir => {}
            other => normal.push(other),
        }
    }
    Ok(normal)
}

/// Writes `text` to a file that must not exist yet (`O_EXCL`: no race with another writer,
/// and a symlink planted there is not followed), with mode [`FILE_MODE`].
fn write_new(path: &Path, text: &str) -> Result<(), InitError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)
        .map_err(|error| InitError::Create {
            path: path.to_path_buf(),
            kind: error.kind(),
        })?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|error| InitError::Write {
            path: path.to_path_buf(),
            kind: error.kind(),
        })
}

#[cfg(test)]
mod tests {
    use super::STARTER;

    /// The commented `[limits]` lines show the real defaults.
    #[test]
    fn the_starter_manifests_commented_limits_are_the_real_defaults() {
        let limits = airlock::Limits::default();
        let rate = airlock::limits::TOOL_CALL_RATE;
        let expected = [
            format!("# tool_timeout_ms = {}", limits.tool_timeout.as_millis()),
            format!(
                "# max_output_bytes = {}",
                airlock_manifest::limits::MAX_OUTPUT_BYTES
            ),
            format!("# max_in_flight = {}", limits.max_in_flight),
            format!(
                "# tool_call_rate = {{ per_minute = {}, burst = {} }}",
                rate.per_minute, rate.burst
            ),
        ];
        for line in expected {
            assert!(
                STARTER.lines().any(|written| written.starts_with(&line)),
                "{line}"
            );
        }
        assert!(STARTER.starts_with("#:schema ./airlock.schema.json\n"));
    }
}
