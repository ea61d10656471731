//! Support, not tests: what every test module drives the real binaries with, each helper
//! written once.
//!
//! - `stdio`: a server process on real pipes (spawn, send a line, read a reply with a
//!   timeout, the handshake), requests and calls as lines, what a reply holds;
//! - `http`: `airlock serve --http` on loopback: raw requests over TCP, parsed replies,
//!   sessions of both eras;
//! - `sse`: an event stream read off its own TCP connection;
//! - `fixtures`: scratch directories and the manifests written into them;
//! - `redis`: a `redis-server` of one test, and replicas of `airlock serve --http` on it;
//! - `processes`: what the kernel says about a process (memory, descendants, signals) and
//!   waiting for a condition;
//! - `audit`: the kernel's audit switch (on or off over netlink), put back as it was found;
//! - `task_client`: the rmcp task client `tests/clients/setup.sh` builds, run and read.

pub mod audit;
pub mod fixtures;
pub mod http;
pub mod processes;
pub mod redis;
pub mod sse;
pub mod stdio;
pub mod task_client;
