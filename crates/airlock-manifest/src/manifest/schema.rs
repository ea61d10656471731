//! `airlock schema`: the manifest's JSON Schema, derived from the raw types the loader reads
//! (`raw.rs`), so that an editor completes and checks exactly the keys `airlock check` takes.
//!
//! The schema checks shape only (keys, types, the words a key takes); the rules that need the
//! machine (a program in PATH, an existing workdir) or the whole tool (placeholders, risks)
//! remain `airlock check`'s.

use super::raw::RawManifest;

/// The file name `airlock init` gives the schema, next to the manifest.
pub const SCHEMA_FILE: &str = "airlock.schema.json";

/// The manifest's JSON Schema (draft 2020-12), pretty-printed, with a final newline.
pub fn json_schema() -> String {
    let mut schema = schemars::schema_for!(RawManifest);
    schema.insert("title".to_owned(), "airlock manifest".into());
    schema.insert(
        "description".to_owned(),
        "The tools airlock lets agents run, and the rules they run under (`airlock check` \
         validates the rest)."
            .into(),
    );
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::json_schema;

    #[test]
    fn the_schema_refuses_unknown_keys_and_knows_every_table() {
        let schema: serde_json::Value = serde_json::from_str(&json_schema()).unwrap();
        assert_eq!(schema["additionalProperties"], false);
        let tables: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            tables,
            ["defaults", "limits", "prompt", "resource", "server", "tool"]
        );
        for table in ["RawPrompt", "RawPromptMessage", "RawResource"] {
            assert_eq!(
                schema["$defs"][table]["additionalProperties"], false,
                "{table}"
            );
        }
        assert_eq!(
            schema["$defs"]["RawResource"]["required"],
            serde_json::json!(["name", "root", "uri"])
        );
        assert_eq!(schema["$defs"]["RawTool"]["additionalProperties"], false);
        assert_eq!(
            schema["$defs"]["RawTool"]["required"],
            serde_json::json!(["name", "description", "command"])
        );
    }
}
