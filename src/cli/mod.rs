//! The commands that set airlock up rather than run it: `init`, `completions`, `man`.

pub(crate) mod docs;
pub(crate) mod init;
