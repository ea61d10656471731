//! `airlock client-config CLIENT`: the exact snippet that puts airlock into an MCP client, with
//! this binary's absolute path, the manifest's, and the variables its tools need.
//!
//! A client starts a stdio server with its own environment, not the shell's: a manifest whose
//! tools read `secret_env` or `env_allow` variables fails to load there, and the client only
//! says "Connection closed". So the snippet names every such variable, with a placeholder for
//! its value (never the value: this prints to a terminal). The names come from the manifest's
//! text, so a manifest whose variables are not set here still gets its snippet.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Map, Value, json};

/// The clients a snippet is written for.
pub(crate) const CLIENTS: [&str; 5] = ["claude-desktop", "claude-code", "cursor", "vscode", "http"];

/// What to print the snippet for.
pub(crate) struct Request<'a> {
    pub(crate) client: &'a str,
    /// The manifest (none: the embedded default).
    pub(crate) manifest: Option<&'a Path>,
    /// For `http`: where the server listens.
    pub(crate) url: &'a str,
    /// For `http`: the variable that holds the bearer token (`--auth-token-env`).
    pub(crate) token_env: &'a str,
}

/// Prints the snippet on stdout and where it goes on stderr.
pub(crate) fn run(request: &Request<'_>) -> ExitCode {
    match snippet(request) {
        Ok((snippet, note)) => {
            let written = std::io::stdout()
                .lock()
                .write_all(snippet.as_bytes())
                .is_ok()
                && std::io::stderr().lock().write_all(note.as_bytes()).is_ok();
            if written {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            let line = format!("airlock client-config: {error}\n");
            if std::io::stderr().lock().write_all(line.as_bytes()).is_err() {
                return ExitCode::FAILURE;
            }
            ExitCode::from(2)
        }
    }
}

/// Why there is no snippet (a usage error).
#[derive(Debug, thiserror::Error)]
enum SnippetError {
    /// This program's path is unknown.
    #[error("cannot find airlock's own program: {0}")]
    Program(std::io::Error),
    /// The manifest cannot be found or read.
    #[error("--manifest {}: {error}", .path.display())]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The manifest is no TOML.
    #[error("--manifest {}: not a TOML manifest (airlock check says why)", .0.display())]
    NotToml(PathBuf),
    /// A `secret_env` or `env_allow` entry is no variable name.
    #[error(
        "--manifest {}: `{key}` holds something that is not a variable name (airlock check says \
         more)",
        .path.display()
    )]
    NotAName {
        /// The manifest.
        path: PathBuf,
        /// `secret_env` or `env_allow`.
        key: &'static str,
    },
    /// A path the snippet would name is not UTF-8.
    #[error("{} is not valid UTF-8", .0.display())]
    NotUtf8(PathBuf),
    /// No such client.
    #[error("no snippet for `{0}`; one of: {clients}", clients = CLIENTS.join(", "))]
    NoClient(String),
}

/// The snippet and a note on where it goes.
fn snippet(request: &Request<'_>) -> Result<(String, String), SnippetError> {
    let program = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(SnippetError::Program)?;
    let manifest = request
        .manifest
        .map(|path| {
            std::fs::canonicalize(path).map_err(|error| SnippetError::Manifest {
                path: path.to_path_buf(),
                error,
            })
        })
        .transpose()?;
    let variables = match &manifest {
        Some(path) => variables(path)?,
        None => Vec::new(),
    };
    let mut args = vec!["serve".to_owned()];
    if let Some(path) = &manifest {
        args.push("--manifest".to_owned());
        args.push(text(path)?);
    }
    let command = text(&program)?;
    let placeholder = |name: &str| format!("<the value of {name}>");
    let mut env = Map::new();
    env.insert("AIRLOCK_LOG".to_owned(), json!("warn"));
    let pretty = |value: Value| format!("{value:#}\n");
    Ok(match request.client {
        "claude-desktop" | "cursor" => {
            for name in &variables {
                env.insert(name.clone(), json!(placeholder(name)));
            }
            let config = json!({"mcpServers": {"airlock": {
                "command": command, "args": args, "env": env,
            }}});
            let file = if request.client == "cursor" {
                "`.cursor/mcp.json` in the project, or `~/.cursor/mcp.json` for every project"
            } else {
                "claude_desktop_config.json (Settings, Developer, Edit Config)"
            };
            (pretty(config), note(file, &variables))
        }
        "vscode" => {
            let mut inputs = Vec::new();
            for name in &variables {
                env.insert(name.clone(), json!(format!("${{input:{name}}}")));
                inputs.push(json!({
                    "type": "promptString", "id": name, "description": name, "password": true,
                }));
            }
            let config = json!({
                "inputs": inputs,
                "servers": {"airlock": {"type": "stdio", "command": command, "args": args, "env": env}},
            });
            let note = format!(
                "# Paste into .vscode/mcp.json (VS Code asks for each input once and keeps it \
                 in its secret storage).{}\n",
                if variables.is_empty() {
                    ""
                } else {
                    " The inputs are the manifest's variables."
                }
            );
            (pretty(config), note)
        }
        "claude-code" => {
            let mut line = "claude mcp add --transport stdio --env AIRLOCK_LOG=warn".to_owned();
            for name in &variables {
                line.push_str(&format!(" --env {name}=\"${name}\""));
            }
            line.push_str(" airlock -- ");
            line.push_str(&shell_quote(&command));
            for arg in &args {
                line.push(' ');
                line.push_str(&shell_quote(arg));
            }
            line.push('\n');
            let note = if variables.is_empty() {
                "# Run it in the project's directory (add --scope user for every project).\n"
                    .to_owned()
            } else {
                "# Run it in the project's directory, with the variables set in this shell: \
                 their values are stored in Claude Code's configuration.\n"
                    .to_owned()
            };
            (line, note)
        }
        "http" => {
            let config = json!({"mcpServers": {"airlock": {
                "type": "http",
                "url": request.url,
                "headers": {"Authorization": format!("Bearer ${{{}}}", request.token_env)},
            }}});
            let mut serve = format!(
                "{}=… {} serve --http {} --auth-token-env {}",
                request.token_env,
                shell_quote(&command),
                listen_address(request.url),
                request.token_env
            );
            if let Some(path) = &manifest {
                serve.push_str(&format!(" --manifest {}", shell_quote(&text(path)?)));
            }
            let note = format!(
                "# For a client that takes a URL and headers (Claude Code's .mcp.json expands \
                 ${{{token}}} from its environment). Start the server with the token in \
                 {token}{and}:\n#   {serve}\n",
                token = request.token_env,
                and = if variables.is_empty() {
                    String::new()
                } else {
                    format!(" and {} set in ITS environment", variables.join(", "))
                },
            );
            (pretty(config), note)
        }
        other => {
            return Err(SnippetError::NoClient(other.to_owned()));
        }
    })
}

/// Where the note says a JSON snippet goes, and which variables it needs.
fn note(file: &str, variables: &[String]) -> String {
    let mut note = format!("# Paste into {file}, under \"mcpServers\" if it has one.\n");
    if !variables.is_empty() {
        note.push_str(&format!(
            "# Replace each placeholder with the variable's value: {} (the client starts \
             airlock with this environment, not your shell's).\n",
            variables.join(", ")
        ));
    }
    note
}

/// The variables a manifest's tools read from airlock's environment (`secret_env`,
/// `env_allow`, in the tools and in `[defaults]`), from its text: it may not load here
/// without them.
fn variables(path: &PathBuf) -> Result<Vec<String>, SnippetError> {
    let text = std::fs::read_to_string(path).map_err(|error| SnippetError::Manifest {
        path: path.clone(),
        error,
    })?;
    let table: toml::Table =
        toml::from_str(&text).map_err(|_| SnippetError::NotToml(path.clone()))?;
    let mut found: Vec<String> = Vec::new();
    let tools = table.get("tool").and_then(toml::Value::as_array);
    let sections = tools.into_iter().flatten().chain(table.get("defaults"));
    for section in sections {
        for key in ["secret_env", "env_allow"] {
            let names = section.get(key).and_then(toml::Value::as_array);
            for name in names.into_iter().flatten().filter_map(toml::Value::as_str) {
                // Printed into a shell line (`--env NAME="$NAME"`): only a variable's name,
                // as the loader itself requires, never text a shell would act on.
                if !airlock::variables::is_variable_name(name) {
                    return Err(SnippetError::NotAName {
                        path: path.clone(),
                        key,
                    });
                }
                if !found.iter().any(|seen| seen == name) {
                    found.push(name.to_owned());
                }
            }
        }
    }
    found.sort();
    Ok(found)
}

/// A path as the snippet's text.
fn text(path: &Path) -> Result<String, SnippetError> {
    path.to_str()
        .map(str::to_owned)
        .ok_or_else(|| SnippetError::NotUtf8(path.to_path_buf()))
}

/// `text` as one shell word.
fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"/._-:=+,@".contains(&byte))
    {
        return text.to_owned();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// `host:port` of an `http://host:port/…` URL, for `--http`.
fn listen_address(url: &str) -> &str {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    rest.split('/').next().unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_the_shell() {
        assert_eq!(shell_quote("/usr/bin/airlock"), "/usr/bin/airlock");
        assert_eq!(shell_quote("/a b/it's"), "'/a b/it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(
            listen_address("http://127.0.0.1:8080/mcp"),
            "127.0.0.1:8080"
        );
    }

    #[test]
    fn a_manifests_variables_are_found_without_their_values() {
        let dir = std::env::temp_dir().join(format!("airlock-client-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tools.toml");
        std::fs::write(
            &path,
            "[defaults]\nenv_allow = [\"LANG\"]\n\n[[tool]]\nname = \"a\"\n\
             secret_env = [\"API_TOKEN\", \"LANG\"]\n",
        )
        .unwrap();
        assert_eq!(variables(&path).unwrap(), ["API_TOKEN", "LANG"]);
        // A name a shell would act on, pasted into `claude mcp add … --env NAME="$NAME"`.
        std::fs::write(
            &path,
            "[[tool]]\nname = \"a\"\nsecret_env = [\"X=\\\"; touch pwned; #\"]\n",
        )
        .unwrap();
        assert!(variables(&path).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
