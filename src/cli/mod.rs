//! The command line (`flags`, with `--http`'s in `http_flags`) and what each command does:
//! `serve` and `check` (over `airlock_manifest::plan`), `audit`, and the commands that set
//! airlock up or try it rather than run it: `init`, `call`, `client-config`, `completions`,
//! `man` (`docs`).

pub(crate) mod audit;
pub(crate) mod call;
pub(crate) mod check;
pub(crate) mod client_config;
pub(crate) mod docs;
pub(crate) mod flags;
pub(crate) mod http_flags;
pub(crate) mod init;
pub(crate) mod output;
pub(crate) mod serve;
pub(crate) mod test_hosts;
