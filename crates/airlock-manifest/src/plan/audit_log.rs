//! The per-call audit record's destination: stderr or a rotated file, and the key that
//! hashes each call's arguments, read from its variable.

use std::num::NonZeroU64;
use std::path::PathBuf;
use std::sync::Arc;

use airlock::variables::VariableName;
use airlock::{CallLog, Rotation};

/// The smallest key `--audit-hash-key-env` accepts: shorter keys make the hash guessable.
pub const MIN_AUDIT_KEY_BYTES: usize = 16;

/// Where the audit record goes and what it holds (`--audit-log*`, `--audit-hash-key-env`).
#[derive(Clone, Debug, Default)]
pub struct AuditLogPlan {
    /// The file (none: stderr).
    pub path: Option<PathBuf>,
    /// Rotate past this many bytes (none: the library's default).
    pub max_bytes: Option<NonZeroU64>,
    /// Rotated files kept (none: the library's default).
    pub keep: Option<u32>,
    /// The variable holding the key of `arguments_hmac`, as given.
    pub hash_key_env: Option<String>,
}

/// The call log a plan opened, and the key's variable, which no tool may receive.
#[derive(Debug)]
pub struct OpenedLog {
    /// The log every call's record goes to.
    pub log: Arc<CallLog>,
    /// `--audit-hash-key-env`, checked.
    pub hash_key_env: Option<VariableName>,
}

/// Why the audit record cannot be kept (fixed text: never the key).
#[derive(Debug, thiserror::Error)]
pub enum AuditLogError {
    /// The file cannot be opened.
    #[error("--audit-log: cannot open {} for appending: {error}", .path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// `--audit-hash-key-env` is no variable name (most likely the key: not shown).
    #[error(
        "--audit-hash-key-env takes the NAME of an environment variable that holds the key, never the key itself (it is not shown)"
    )]
    KeyVariable,
    /// The key is missing or too short to make the hash unguessable.
    #[error(
        "--audit-hash-key-env: the variable {0} must hold a key of at least {MIN_AUDIT_KEY_BYTES} bytes (it is missing or shorter)"
    )]
    ShortKey(VariableName),
    /// SIGUSR1 cannot be watched.
    #[error("--audit-log: cannot watch SIGUSR1 to reopen the file: {0}")]
    Signal(std::io::ErrorKind),
}

impl AuditLogPlan {
    /// The call log this plan describes, reopened on SIGUSR1.
    ///
    /// # Errors
    ///
    /// An [`AuditLogError`].
    pub fn open(&self) -> Result<OpenedLog, AuditLogError> {
        let log = match &self.path {
            None => CallLog::stderr(),
            Some(path) => {
                let mut rotation = Rotation::default();
                if let Some(max) = self.max_bytes {
                    rotation.max_bytes = max.get();
                }
                if let Some(keep) = self.keep {
                    rotation.keep = keep;
                }
                CallLog::rotated(path, rotation)
            }
            .map_err(|error| AuditLogError::Open {
                path: path.clone(),
                error,
            })?,
        };
        let (log, hash_key_env) = match &self.hash_key_env {
            None => (log, None),
            Some(name) => {
                let name = VariableName::parse(name).ok_or(AuditLogError::KeyVariable)?;
                let key = std::env::var_os(name.as_str()).unwrap_or_default();
                if key.len() < MIN_AUDIT_KEY_BYTES {
                    return Err(AuditLogError::ShortKey(name));
                }
                (log.with_argument_key(key.as_encoded_bytes()), Some(name))
            }
        };
        let log = Arc::new(log);
        log.reopen_on_sigusr1()
            .map_err(|error| AuditLogError::Signal(error.kind()))?;
        Ok(OpenedLog { log, hash_key_env })
    }
}
