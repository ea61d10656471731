//! The commands that set airlock up or try it rather than run it: `init`, `call`,
//! `completions`, `man`.

pub(crate) mod call;
pub(crate) mod docs;
pub(crate) mod init;
