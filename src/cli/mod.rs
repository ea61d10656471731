//! The commands that set airlock up or try it rather than run it: `init`, `call`,
//! `client-config`, `completions`, `man`.

pub(crate) mod call;
pub(crate) mod client_config;
pub(crate) mod docs;
pub(crate) mod init;
