//! `airlock init [DIR]`: a commented starter manifest and its JSON Schema, written next to each
//! other, never over an existing file.
//!
//! The manifest (`init.toml`, embedded) holds the default tools, one argument of each type,
//! the sandbox keys and `[defaults]`, and passes `airlock check` on a Linux machine with
//! coreutils and grep (tested). Its tools work in DIR, so a DIR that is no directory to serve
//! whole (`/`, the home directory or one holding it, a system tree) is refused, as the
//! embedded default manifest refuses it.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use airlock_manifest::manifest;

/// The starter manifest.
pub(crate) const STARTER: &str = include_str!("init.toml");

/// What `airlock init` wrote, or why it wrote nothing.
pub(crate) fn run(dir: &Path, manifest_name: &str) -> Result<String, String> {
    std::fs::create_dir_all(dir)
        .map_err(|error| format!("cannot create {}: {}", dir.display(), error.kind()))?;
    let full = std::fs::canonicalize(dir)
        .map_err(|error| format!("cannot resolve {}: {}", dir.display(), error.kind()))?;
    if let Some(why) = manifest::unsafe_root(&full) {
        return Err(format!(
            "will not write a manifest serving {}: {why}. Run it in (or name) the project's \
             directory: airlock init my-project",
            full.display()
        ));
    }
    let manifest_path = dir.join(manifest_name);
    let schema_path = dir.join(manifest::SCHEMA_FILE);
    // Both checked first, so that nothing is written when either is there.
    for path in [&manifest_path, &schema_path] {
        if path.symlink_metadata().is_ok() {
            return Err(format!(
                "{} already exists; not overwritten (move it away, or run airlock init in \
                 another directory)",
                path.display()
            ));
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

/// Writes `text` to a file that must not exist yet (`O_EXCL`: no race with another writer,
/// and a symlink planted there is not followed).
fn write_new(path: &PathBuf, text: &str) -> Result<(), String> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|error| format!("cannot create {}: {}", path.display(), error.kind()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|error| format!("cannot write {}: {}", path.display(), error.kind()))
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
            format!("# max_output_bytes = {}", airlock::limits::MAX_OUTPUT_BYTES),
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
