//! The catalog a built server lists (tools, prompts, resources, resource templates,
//! instructions), read through a session engine of its own exactly as a client reads it after
//! `initialize`, and the `_meta` that publishes its digest.
//!
//! The engine is asked in protocol revision [`CATALOG_REVISION`], the one `airlock audit`
//! speaks, so the digest `airlock serve` publishes is the digest `airlock audit --pin` writes
//! for the same server (`airlock_metadata::Catalog::digest`). What it trusts: the server it
//! is given (the operator's); nothing here reaches a peer.

use airlock::Server;
use airlock::transport::Engine;
use airlock_metadata::Catalog;
use serde_json::{Map, Value, json};

/// The catalog `server` lists.
pub fn catalog(server: &Server) -> Catalog {
    let mut reader = Reader {
        engine: server.engine(),
        id: 0,
    };
    let info = reader.ask(
        "initialize",
        json!({
            "protocolVersion": CATALOG_REVISION,
            "capabilities": {},
            "clientInfo": {"name": "airlock-catalog", "version": env!("CARGO_PKG_VERSION")},
        }),
    );
    let mut out = Vec::new();
    // A notification: no reply, no call started.
    drop(reader.engine.handle(
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &mut out,
    ));
    let declared = |name: &str| {
        info.as_ref()
            .and_then(|info| info.get("capabilities"))
            .and_then(|capabilities| capabilities.get(name))
            .is_some()
    };
    let (prompts, resources) = (declared("prompts"), declared("resources"));
    Catalog {
        instructions: info
            .as_ref()
            .and_then(|info| info.get("instructions"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        tools: reader.paged("tools/list", "tools"),
        prompts: if prompts {
            reader.paged("prompts/list", "prompts")
        } else {
            Vec::new()
        },
        resources: if resources {
            reader.paged("resources/list", "resources")
        } else {
            Vec::new()
        },
        resource_templates: if resources {
            reader.paged("resources/templates/list", "resourceTemplates")
        } else {
            Vec::new()
        },
    }
}

/// A session of the server's, asked as a client asks.
struct Reader {
    engine: Engine,
    id: u64,
}

impl Reader {
    /// The result of a request (`None`: an error, or no reply).
    fn ask(&mut self, method: &str, params: Value) -> Option<Value> {
        self.id = self.id.saturating_add(1);
        let line = json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params});
        let mut out = Vec::new();
        // Listing and initialize are answered inline; no call is started.
        drop(self.engine.handle(line.to_string().as_bytes(), &mut out));
        let reply: Value = serde_json::from_slice(out.trim_ascii_end()).ok()?;
        reply.get("result").cloned()
    }

    /// The items of `key` over every page of `method`.
    fn paged(&mut self, method: &str, key: &str) -> Vec<Value> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = cursor
                .take()
                .map_or_else(|| json!({}), |at| json!({"cursor": at}));
            let Some(page) = self.ask(method, params) else {
                break;
            };
            if let Some(listed) = page.get(key).and_then(Value::as_array) {
                items.extend(listed.iter().cloned());
            }
            cursor = page
                .get("nextCursor")
                .and_then(Value::as_str)
                .filter(|next| !next.is_empty())
                .map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        items
    }
}

/// The server-info `_meta` that publishes `catalog`'s digest under [`DIGEST_META_KEY`].
pub fn digest_meta(catalog: &Catalog) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(DIGEST_META_KEY.to_owned(), Value::String(catalog.digest()));
    meta
}

/// The `_meta` key `airlock serve` publishes its catalog's digest under.
pub const DIGEST_META_KEY: &str = "airlock/catalogDigest";

/// The protocol revision the catalog is read in (the one `airlock audit` speaks).
pub const CATALOG_REVISION: &str = "2025-11-25";

/// Pages of one list read (the library's own lists end; this bounds a bug, not a peer).
const MAX_PAGES: usize = 1024;
