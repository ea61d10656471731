//! Fuzzing entry points of the manifest side: the loader, argv building, the sandbox policy a
//! manifest's tools get, the redaction of secrets from their output, and the kernel's audit
//! records the sandbox's denials are read from.
//!
//! Built only for tests and with `--cfg fuzzing` (cargo-fuzz sets it), like the protocol
//! core's `airlock::fuzzing`. A broken invariant panics: that is how a fuzzer reports it.
//!
//! The `policy` target trusts nothing of the loader's: what a tool may be granted is worked out
//! again from the manifest's raw TOML (`Expected`), and the policy the loader built is held
//! against it (`breach`). The manifests it loads resolve their paths in a scratch tree, one
//! per user, made on first use and reused by every run (`scratch`), with real files,
//! directories, a program, and symbolic links inside and out of it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use crate::limits::{
    SANDBOX_CALL_MEMORY_MIB, SANDBOX_CPU_SECONDS, SANDBOX_DISK_FILES, SANDBOX_DISK_MIB,
    SANDBOX_FILE_SIZE_MIB, SANDBOX_MAX_CALL_MEMORY_MIB, SANDBOX_MAX_CPU_SECONDS,
    SANDBOX_MAX_DISK_FILES, SANDBOX_MAX_DISK_MIB, SANDBOX_MAX_FILE_SIZE_MIB,
    SANDBOX_MAX_MEMORY_MIB, SANDBOX_MAX_OPEN_FILES, SANDBOX_MAX_PROCESSES, SANDBOX_MEMORY_MIB,
    SANDBOX_OPEN_FILES, SANDBOX_PROCESSES,
};
use crate::sandbox::{NETWORK_READ, Policy, SYSTEM_READ, SYSTEM_WRITE_FILES, interpreters};

/// Manifest: any text into the manifest loader; it returns, and an error renders as one
/// non-empty message.
pub fn manifest(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(error) = crate::manifest::parse(text, "fuzz.toml", &std::env::temp_dir()) {
        let rendered = error.to_string();
        assert!(rendered.starts_with("fuzz.toml"), "{rendered}");
    }
}

/// argv: any JSON object as arguments of a tool using every placeholder shape; every string
/// value becomes exactly one argv element (or the value part of `--opt=`), literals pass
/// through unchanged and in order, and no value reaches an option position with a leading
/// dash.
pub fn argv(data: &[u8]) {
    use crate::manifest::{ArgKind, Element};
    let Ok(Value::Object(arguments)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let tool = argv_tool();
    let Ok(invocation) = crate::command::argv::build(&tool, &arguments) else {
        return;
    };
    let mut produced = invocation.args.iter();
    for element in &tool.template {
        match element {
            Element::Literal(text) => {
                assert_eq!(
                    produced.next().map(|a| a.to_str()),
                    Some(Some(text.as_str()))
                );
            }
            Element::Value {
                arg,
                prefix,
                suffix,
                after_double_dash,
            } => {
                let Some(spec) = tool.args.get(*arg) else {
                    fail("argument index")
                };
                let value = match arguments.get(&spec.name) {
                    Some(Value::Null) | None => spec.default.clone(),
                    Some(value) => Some(value.clone()),
                };
                let Some(value) = value else { continue };
                let expected: Vec<String> = match (&spec.kind, &value) {
                    (ArgKind::String(_), Value::String(text)) => vec![text.clone()],
                    (ArgKind::Integer { .. }, Value::Number(n)) => vec![n.to_string()],
                    (ArgKind::Boolean { flag: Some(flag) }, Value::Bool(true)) => {
                        vec![flag.clone()]
                    }
                    (ArgKind::Boolean { flag: Some(_) }, Value::Bool(false)) => Vec::new(),
                    (ArgKind::Array { .. }, Value::Array(items)) => items
                        .iter()
                        .map(|item| item.as_str().map(str::to_owned).unwrap_or_default())
                        .collect(),
                    _ => fail("build accepted a value of the wrong type"),
                };
                let whole = prefix.is_empty() && suffix.is_empty();
                for piece in expected {
                    let got = produced
                        .next()
                        .and_then(|a| a.to_str())
                        .unwrap_or_else(|| fail("an element is missing"));
                    assert_eq!(
                        got,
                        format!("{prefix}{piece}{suffix}"),
                        "a value was split or joined"
                    );
                    if whole && !after_double_dash && !matches!(&spec.kind, ArgKind::Boolean { .. })
                    {
                        assert!(!got.starts_with('-'), "a value reached an option position");
                    }
                }
            }
        }
    }
    assert!(produced.next().is_none(), "extra argv elements");
}

fn argv_tool() -> crate::manifest::CommandTool {
    static TOOL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let text = TOOL.get_or_init(|| {
        r#"
[[tool]]
name = "shapes"
description = "every placeholder shape"
command = ["echo", "{word}", "--count={count}", "{verbose}", "--tag={tags}", "{level}", "--", "{rest}", "{files}"]
args.word = { type = "string", max_length = 64 }
args.count = { type = "integer", minimum = 0, maximum = 9, default = 3 }
args.verbose = { type = "boolean", flag = "--verbose" }
args.tags = { type = "array", max_items = 4, default = [] }
args.level = { type = "integer", minimum = 0, maximum = 5, required = false, default = 1 }
args.rest = { type = "string", allow_leading_dash = true, required = false }
args.files = { type = "array", max_items = 3, default = [] }
"#
        .to_owned()
    });
    let manifest = crate::manifest::parse(text, "argv.toml", &std::env::temp_dir())
        .unwrap_or_else(|_| fail("the argv fuzz manifest does not load"));
    manifest
        .tools
        .into_iter()
        .next()
        .unwrap_or_else(|| fail("no tool"))
}

/// Policy: any text as a manifest over the scratch tree, and any bytes as the policy JSON a
/// launcher receives.
///
/// For every sandboxed tool of a manifest that loads, the policy `airlock serve` would use
/// (the loader builds it) grants nothing the manifest's raw TOML does not declare (see
/// [`Breach`] for each rule); a tool is unsandboxed exactly when it says `sandbox = "off"`.
/// Policy JSON either fails to decode or encodes back to the same policy and text.
pub fn policy(data: &[u8]) {
    policy_json(data);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let tree = scratch();
    let loaded = crate::manifest::parse(text, "policy.toml", &tree.root);
    tally(loaded.is_ok());
    let Ok(manifest) = loaded else {
        return;
    };
    let raw: toml::Table = text
        .parse()
        .unwrap_or_else(|_| fail("the loader took text that is not TOML"));
    let expected = Expected::of(&raw, &tree.root);
    assert_eq!(expected.len(), manifest.tools.len(), "a tool lost or added");
    let named = named(&raw, &tree.root, &expected);
    for (tool, expected) in manifest.tools.iter().zip(&expected) {
        match (&tool.sandbox, expected) {
            (None, None) => {}
            (Some(confinement), Some(expected)) => {
                let policy = confinement.policy();
                if let Some(breach) = breach(policy, &confinement.encoded(), expected, &named, tree)
                {
                    fail(&format!("tool {}: {breach:?}", tool.name.as_str()));
                }
                // `airlock check` prints every policy a manifest makes: it must describe each
                // one, naming its network whatever the manifest said.
                if !policy.describe("").contains("network:   ") {
                    fail(&format!(
                        "tool {}: no network line in its description",
                        tool.name.as_str()
                    ));
                }
            }
            (Some(_), None) => fail("a tool with sandbox = \"off\" is sandboxed"),
            (None, Some(_)) => fail("a tool runs unsandboxed without sandbox = \"off\""),
        }
    }
}

/// Any bytes as the policy JSON of the launcher's command line: it decodes or fails, and what
/// decodes encodes back to the same policy and the same text.
pub fn policy_json(data: &[u8]) {
    let Ok(decoded) = serde_json::from_slice::<Policy>(data) else {
        return;
    };
    let text = serde_json::to_string(&decoded)
        .unwrap_or_else(|_| fail("a decoded policy does not encode"));
    let again: Policy =
        serde_json::from_str(&text).unwrap_or_else(|_| fail("an encoded policy does not decode"));
    assert_eq!(again, decoded, "a policy changed through JSON");
    assert_eq!(
        serde_json::to_string(&again).ok().as_deref(),
        Some(text.as_str()),
        "a policy's JSON is not stable"
    );
}

/// The scratch tree manifests resolve their paths in.
#[derive(Debug)]
pub struct Scratch {
    /// Its root (canonical): a manifest's base directory.
    pub root: PathBuf,
    /// A directory outside it that the symbolic link `escape` (and `work/escape`) points to.
    pub outside: PathBuf,
}

/// The scratch tree: `work/` (with `data/notes.txt`, `out/`, `link` → `../docs`, `escape` →
/// outside), `sandbox-demo/{data,out}`, `docs/readme.md`, `bin/tool` (an executable script),
/// `bin/plain` (not executable), and `escape` → a directory outside the tree.
///
/// One tree per user (and layout), `airlock-fuzz-policy-<uid>-v1` in the temporary directory, shared by every
/// fuzzing process and test run and left for the next (nothing removes it at exit: libFuzzer
/// ends the process with `exit`): what it holds is fixed, and neither the loader nor the
/// oracle writes to it. It is made, or mended, on first use; one that another user owns, or
/// that is a symbolic link, is refused.
pub fn scratch() -> &'static Scratch {
    static TREE: OnceLock<Scratch> = OnceLock::new();
    TREE.get_or_init(|| make_scratch().unwrap_or_else(|_| fail("the scratch tree cannot be made")))
}

/// The scratch tree's layout, in its name: a build that lays it out otherwise (another
/// branch, a later version) uses a tree of its own rather than mending this one under a run.
const SCRATCH_LAYOUT: u32 = 2;

fn make_scratch() -> std::io::Result<Scratch> {
    use std::os::unix::fs::MetadataExt as _;
    let temp = std::fs::canonicalize(std::env::temp_dir())?;
    let uid = rustix::process::getuid().as_raw();
    let root = temp.join(format!("airlock-fuzz-policy-{uid}-v{SCRATCH_LAYOUT}"));
    let outside = temp.join(format!(
        "airlock-fuzz-policy-{uid}-v{SCRATCH_LAYOUT}-outside"
    ));
    for dir in [&root, &outside] {
        if let Err(error) = std::fs::create_dir(dir)
            && error.kind() != std::io::ErrorKind::AlreadyExists
        {
            return Err(error);
        }
        // Not another user's tree, nor a link planted in a shared temporary directory.
        let meta = std::fs::symlink_metadata(dir)?;
        if !meta.is_dir() || meta.uid() != uid {
            return Err(std::io::ErrorKind::PermissionDenied.into());
        }
    }
    for dir in [
        "work/data",
        "work/out",
        "work/.git/hooks",
        "work/data/.vscode",
        "sandbox-demo/data",
        "sandbox-demo/out",
        "docs",
        "bin",
    ] {
        std::fs::create_dir_all(root.join(dir))?;
    }
    file(&outside.join("secret.txt"), "outside the tree\n", 0o644)?;
    file(&root.join("work/data/notes.txt"), "notes\n", 0o644)?;
    file(&root.join("work/.envrc"), "export A=1\n", 0o644)?;
    file(&root.join("docs/readme.md"), "readme\n", 0o644)?;
    file(&root.join("bin/tool"), "#!/bin/sh\necho tool\n", 0o755)?;
    file(&root.join("bin/plain"), "plain\n", 0o644)?;
    link(&outside, &root.join("escape"))?;
    link(&outside, &root.join("work/escape"))?;
    link(Path::new("../docs"), &root.join("work/link"))?;
    Ok(Scratch { root, outside })
}

/// A file at `at` holding `text` with permissions `mode`: kept if it does, else written beside
/// it and renamed over it, so that another process using the tree never reads it half made.
fn file(at: &Path, text: &str, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let same = std::fs::symlink_metadata(at)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o777 == mode)
        && std::fs::read(at).is_ok_and(|held| held == text.as_bytes());
    if same {
        return Ok(());
    }
    let mut name = at.as_os_str().to_owned();
    name.push(format!(".{}", std::process::id()));
    let fresh = PathBuf::from(name);
    std::fs::write(&fresh, text)?;
    std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(mode))?;
    std::fs::rename(&fresh, at)
}

/// A symbolic link at `at` to `target`: made, kept if it is one already, or made again.
fn link(target: &Path, at: &Path) -> std::io::Result<()> {
    if std::fs::read_link(at).is_ok_and(|found| found == target) {
        return Ok(());
    }
    match std::fs::remove_file(at) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    match std::os::unix::fs::symlink(target, at) {
        // Another process made it meanwhile.
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

/// Counts loads, and with `AIRLOCK_FUZZ_STATS` set prints how many inputs loaded every 65,536
/// inputs (how often the fuzzer reaches the policy at all).
fn tally(loaded: bool) {
    static INPUTS: AtomicU64 = AtomicU64::new(0);
    static LOADED: AtomicU64 = AtomicU64::new(0);
    static SHOW: OnceLock<bool> = OnceLock::new();
    let inputs = INPUTS.fetch_add(1, Ordering::Relaxed).saturating_add(1);
    if loaded {
        LOADED.fetch_add(1, Ordering::Relaxed);
    }
    if inputs.is_multiple_of(65_536)
        && *SHOW.get_or_init(|| std::env::var_os("AIRLOCK_FUZZ_STATS").is_some())
    {
        show_stats(inputs, LOADED.load(Ordering::Relaxed));
    }
}

#[expect(
    clippy::print_stderr,
    reason = "fuzzing statistics, asked for by AIRLOCK_FUZZ_STATS"
)]
fn show_stats(inputs: u64, loaded: u64) {
    eprintln!("policy: {loaded} of {inputs} inputs loaded as manifests");
}

/// What one sandboxed tool may be granted, worked out from the raw TOML alone: every path
/// canonical, `[defaults]` merged as the manifest documentation says.
#[derive(Clone, Debug, Default)]
pub struct Expected {
    /// The program (`command[0]`, a path from the base or a name found in `PATH`).
    pub program: PathBuf,
    /// The workdir (the base when unset).
    pub workdir: PathBuf,
    /// Each path argument's `within` (from the workdir).
    pub roots: Vec<PathBuf>,
    /// `read` (from the base).
    pub read: Vec<PathBuf>,
    /// `write` (from the workdir).
    pub write: Vec<PathBuf>,
    /// `exec` (from the base, or found in `PATH`).
    pub exec: Vec<PathBuf>,
    /// `network = true`.
    pub network: bool,
    /// Each declared resource: processes, memory_mib, cpu_seconds, file_size_mib, open_files.
    pub resources: [Option<u64>; 8],
}

impl Expected {
    /// Each `[[tool]]` of `raw` in order: `None` for `sandbox = "off"`. Paths that do not
    /// resolve are left out (the loader refuses them, so they never meet a loaded manifest).
    pub fn of(raw: &toml::Table, base: &Path) -> Vec<Option<Self>> {
        let empty = toml::Table::new();
        let defaults = raw
            .get("defaults")
            .and_then(toml::Value::as_table)
            .unwrap_or(&empty);
        let tools = raw
            .get("tool")
            .and_then(toml::Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        tools
            .iter()
            .map(|tool| {
                let tool = tool.as_table().unwrap_or(&empty);
                let off = tool.get("sandbox").and_then(toml::Value::as_str) == Some("off");
                (!off).then(|| Self::tool(tool, defaults, base))
            })
            .collect()
    }

    fn tool(tool: &toml::Table, defaults: &toml::Table, base: &Path) -> Self {
        let text = |table: &toml::Table, key: &str| {
            table
                .get(key)
                .and_then(toml::Value::as_str)
                .and_then(expand)
        };
        let list = |key: &str| -> Vec<String> {
            [defaults, tool]
                .iter()
                .filter_map(|table| table.get(key).and_then(toml::Value::as_array))
                .flatten()
                .filter_map(toml::Value::as_str)
                .filter_map(expand)
                .collect()
        };
        let workdir = text(tool, "workdir")
            .or_else(|| text(defaults, "workdir"))
            .map_or_else(|| canonical(base), |dir| canonical(&base.join(dir)));
        let program = tool
            .get("command")
            .and_then(toml::Value::as_array)
            .and_then(|command| command.first())
            .and_then(toml::Value::as_str)
            .and_then(expand)
            .and_then(|program| program_path(&program, base))
            .unwrap_or_default();
        let roots = tool
            .get("args")
            .and_then(toml::Value::as_table)
            .into_iter()
            .flat_map(|args| args.values())
            .filter_map(toml::Value::as_table)
            .filter(|arg| arg.get("type").and_then(toml::Value::as_str) == Some("path"))
            .map(|arg| {
                let within = text(arg, "within").unwrap_or_else(|| ".".to_owned());
                canonical(&workdir.join(within))
            })
            .collect();
        let read = list("read")
            .iter()
            .map(|r| canonical(&base.join(r)))
            .collect();
        let write = list("write")
            .iter()
            .map(|w| canonical(&workdir.join(w)))
            .collect();
        let exec = list("exec")
            .iter()
            .filter_map(|e| program_path(e, base).or_else(|| Some(canonical(&base.join(e)))))
            .collect();
        let network = tool
            .get("network")
            .or_else(|| defaults.get("network"))
            .is_some_and(|value| {
                value.as_bool().unwrap_or(false)
                    || value.as_array().is_some_and(|list| !list.is_empty())
            });
        let resource = |name: &str| {
            [tool, defaults]
                .iter()
                .filter_map(|table| table.get("resources").and_then(toml::Value::as_table))
                .find_map(|resources| resources.get(name))
                .and_then(toml::Value::as_integer)
                .and_then(|n| u64::try_from(n).ok())
        };
        Self {
            program,
            workdir,
            roots,
            read,
            write,
            exec,
            network,
            resources: RESOURCE_NAMES.map(resource),
        }
    }
}

const RESOURCE_NAMES: [&str; 8] = [
    "processes",
    "memory_mib",
    "cpu_seconds",
    "file_size_mib",
    "open_files",
    "call_memory_mib",
    "disk_mib",
    "disk_files",
];

/// A rule of what a policy may grant, broken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Breach {
    /// A granted path is not canonical (the launcher opens it without following links).
    NotCanonical(PathBuf),
    /// The leading system entries of `read` are not the fixed system list.
    SystemList(PathBuf),
    /// (1) A path past the system list that the manifest did not declare for that right.
    Undeclared(&'static str, PathBuf),
    /// (2) A writable directory that is `/` or a system path, or holds one.
    WritesSystem(PathBuf),
    /// (3) Network granted without `network = true`, or refused with it.
    Network,
    /// (4) A resource other than the declared value (or the default), or over its maximum.
    Resource(&'static str),
    /// (5) A path outside the scratch tree and the system list that the manifest never named.
    Unnamed(PathBuf),
    /// (6) The policy as the launcher decodes it is not the policy.
    RoundTrip,
    /// (7) The view binds a path the policy does not grant (but `/dev/null` and the
    /// later-code paths inside a writable directory), binds one writable that is not a
    /// writable directory, or leaves a later-code path inside a writable directory writable
    /// without the grant naming it.
    View(PathBuf),
    /// (8) A symbolic link the view recreates lies inside a granted tree, or is not the same
    /// link on the host.
    Link(PathBuf),
}

/// The first rule `policy` (encoded for the launcher as `encoded`) breaks, given what the
/// manifest declared and every path it `named`; `None` when it keeps them all.
pub fn breach(
    policy: &Policy,
    encoded: &str,
    expected: &Expected,
    named: &[PathBuf],
    tree: &Scratch,
) -> Option<Breach> {
    let system = system_list(policy.network);
    let split = policy.system_entries.min(policy.read.len());
    let (system_read, read) = policy.read.split_at(split);
    for path in policy.read.iter().chain(&policy.exec).chain(&policy.write) {
        if std::fs::canonicalize(path).ok().as_deref() != Some(path.as_path()) {
            return Some(Breach::NotCanonical(path.clone()));
        }
    }
    if let Some(path) = system_read.iter().find(|path| !system.contains(path)) {
        return Some(Breach::SystemList(path.clone()));
    }
    let mut interpreted = interpreters(&expected.program);
    for exec in expected.exec.iter().filter(|exec| exec.is_file()) {
        interpreted.extend(interpreters(exec));
    }
    let readable: Vec<&PathBuf> = std::iter::once(&expected.workdir)
        .chain(&expected.roots)
        .chain(&expected.read)
        .collect();
    let executable: Vec<&PathBuf> = std::iter::once(&expected.program)
        .chain(&expected.exec)
        .chain(&interpreted)
        .collect();
    for (right, granted, allowed) in [
        ("read", read, &readable),
        ("exec", policy.exec.as_slice(), &executable),
        (
            "write",
            policy.write.as_slice(),
            &expected.write.iter().collect(),
        ),
    ] {
        if let Some(path) = granted.iter().find(|path| !allowed.contains(path)) {
            return Some(Breach::Undeclared(right, path.clone()));
        }
    }
    let all_system = system_list(true);
    let trees = system_trees();
    for dir in &policy.write {
        let system = all_system
            .iter()
            .chain(&trees)
            .any(|entry| dir.starts_with(entry) || entry.starts_with(dir));
        if dir == Path::new("/") || system {
            return Some(Breach::WritesSystem(dir.clone()));
        }
    }
    if policy.network != expected.network {
        return Some(Breach::Network);
    }
    let r = &policy.resources;
    let granted = [
        (
            u64::from(r.processes),
            SANDBOX_PROCESSES.into(),
            SANDBOX_MAX_PROCESSES.into(),
        ),
        (r.memory_mib, SANDBOX_MEMORY_MIB, SANDBOX_MAX_MEMORY_MIB),
        (r.cpu_seconds, SANDBOX_CPU_SECONDS, SANDBOX_MAX_CPU_SECONDS),
        (
            r.file_size_mib,
            SANDBOX_FILE_SIZE_MIB,
            SANDBOX_MAX_FILE_SIZE_MIB,
        ),
        (r.open_files, SANDBOX_OPEN_FILES, SANDBOX_MAX_OPEN_FILES),
        (
            r.call_memory_mib,
            SANDBOX_CALL_MEMORY_MIB,
            SANDBOX_MAX_CALL_MEMORY_MIB,
        ),
        (r.disk_mib, SANDBOX_DISK_MIB, SANDBOX_MAX_DISK_MIB),
        (r.disk_files, SANDBOX_DISK_FILES, SANDBOX_MAX_DISK_FILES),
    ];
    for ((name, declared), (value, default, most)) in
        RESOURCE_NAMES.iter().zip(expected.resources).zip(granted)
    {
        if value != declared.unwrap_or(default) || value > most || value == 0 {
            return Some(Breach::Resource(name));
        }
    }
    let unnamed = policy
        .read
        .iter()
        .chain(&policy.exec)
        .chain(&policy.write)
        .find(|path| {
            !path.starts_with(&tree.root)
                && !all_system.iter().any(|entry| path.starts_with(entry))
                && !named.contains(path)
        });
    if let Some(path) = unnamed {
        return Some(Breach::Unnamed(path.clone()));
    }
    if let Some(breach) = view_breach(policy) {
        return Some(breach);
    }
    let decoded: Option<Policy> = serde_json::from_str(encoded).ok();
    let same = decoded.is_some_and(|mut decoded| {
        decoded.system_entries = policy.system_entries;
        decoded == *policy
    });
    if !same || serde_json::to_string(policy).ok().as_deref() != Some(encoded) {
        return Some(Breach::RoundTrip);
    }
    None
}

/// Rules (7) and (8): the command's view holds the grants and nothing more, and recreates the
/// host's links only where no grant brings them.
fn view_breach(policy: &Policy) -> Option<Breach> {
    use crate::sandbox::later_code::is_later_code;
    use crate::sandbox::mounts::Access;
    let granted: Vec<&PathBuf> = policy
        .read
        .iter()
        .chain(&policy.exec)
        .chain(&policy.write)
        .collect();
    let plan = crate::sandbox::mounts::plan(policy);
    for (path, access) in &plan {
        let in_writable = policy
            .write
            .iter()
            .any(|dir| path.starts_with(dir) && path != dir);
        let later_code = in_writable && path.file_name().is_some_and(is_later_code);
        let fine = match access {
            Access::Writable => policy.write.contains(path),
            Access::Device => SYSTEM_WRITE_FILES
                .iter()
                .any(|device| Path::new(device) == path),
            Access::ReadOnly => granted.contains(&path) || later_code,
        };
        if !fine {
            return Some(Breach::View(path.clone()));
        }
    }
    // Every later-code path inside a writable directory that the grant does not name is bound
    // read-only, below (after) the writable bind it lies in.
    for dir in &policy.write {
        for found in crate::sandbox::later_code::find(dir).paths {
            if policy.write.contains(&found) {
                continue;
            }
            let writable_at = plan.iter().position(|(path, _)| path == dir);
            let protected_at = plan
                .iter()
                .position(|(path, access)| *path == found && *access == Access::ReadOnly);
            if !matches!((writable_at, protected_at), (Some(w), Some(p)) if w < p) {
                return Some(Breach::View(found));
            }
        }
    }
    let bound: Vec<&PathBuf> = plan.iter().map(|(path, _)| path).collect();
    for (link, target) in &policy.links {
        let inside = bound.iter().any(|tree| link.starts_with(tree));
        if inside || std::fs::read_link(link).ok().as_ref() != Some(target) {
            return Some(Breach::Link(link.clone()));
        }
    }
    None
}

/// The fixed system list (with the network's, for `network`), canonical, as it is on this
/// machine.
fn system_list(network: bool) -> Vec<PathBuf> {
    let extra: &[&str] = if network { NETWORK_READ } else { &[] };
    SYSTEM_READ
        .iter()
        .chain(extra)
        .filter_map(|path| std::fs::canonicalize(path).ok())
        .collect()
}

/// The system trees no command may write, as named and as their real paths: said again here
/// (not taken from the loader) so that the oracle does not share a mistake of its list.
fn system_trees() -> Vec<PathBuf> {
    const TREES: [&str; 17] = [
        "/usr",
        "/etc",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/bin",
        "/sbin",
        "/boot",
        "/proc",
        "/sys",
        "/dev",
        "/root",
        "/run",
        "/var/spool",
        "/var/lib",
        "/var/log",
    ];
    let mut trees: Vec<PathBuf> = TREES.iter().map(PathBuf::from).collect();
    trees.extend(
        TREES
            .iter()
            .filter_map(|tree| std::fs::canonicalize(tree).ok()),
    );
    trees
}

/// Every path the manifest names anywhere (any string, expanded, from the base, from each
/// tool's workdir and as a program in `PATH`), canonical, with its interpreters.
pub fn named(raw: &toml::Table, base: &Path, tools: &[Option<Expected>]) -> Vec<PathBuf> {
    fn strings<'v>(value: &'v toml::Value, out: &mut Vec<&'v str>) {
        match value {
            toml::Value::String(text) => out.push(text),
            toml::Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
            toml::Value::Table(table) => table.values().for_each(|item| strings(item, out)),
            _ => {}
        }
    }
    let mut texts = Vec::new();
    raw.values().for_each(|value| strings(value, &mut texts));
    let dirs: Vec<&Path> = std::iter::once(base)
        .chain(tools.iter().flatten().map(|tool| tool.workdir.as_path()))
        .collect();
    let mut found = Vec::new();
    for text in texts {
        let Some(text) = expand(text) else { continue };
        for dir in &dirs {
            found.push(canonical(&dir.join(&text)));
        }
        if let Some(program) = program_path(&text, base) {
            found.push(program);
        }
    }
    let interpreted: Vec<PathBuf> = found
        .iter()
        .filter(|path| path.is_file())
        .flat_map(|path| interpreters(path))
        .collect();
    found.extend(interpreted);
    found
}

/// A program as the loader finds it, found again: a path with `/` from `base`, a bare name
/// in the absolute directories of `PATH`; an executable regular file, canonical.
fn program_path(program: &str, base: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let runnable = |path: &Path| {
        std::fs::metadata(path)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    };
    let found = if program.contains('/') {
        Some(base.join(program)).filter(|path| runnable(path))
    } else if program.is_empty() {
        None
    } else {
        let search = std::env::var_os("PATH")?;
        std::env::split_paths(&search)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(program))
            .find(|path| runnable(path))
    }?;
    std::fs::canonicalize(found).ok()
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `~` at the start (`$HOME`), `${NAME}` and `$$`, as the manifest documentation describes
/// them; `None` for anything else with a `$` or a `~user`, or an unset or empty variable.
fn expand(text: &str) -> Option<String> {
    let variable = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    let (mut out, mut rest) = match text.strip_prefix('~') {
        Some(after) if after.is_empty() || after.starts_with('/') => (variable("HOME")?, after),
        Some(_) => return None,
        None => (String::new(), text),
    };
    while let Some(at) = rest.find('$') {
        let (before, after) = rest.split_at(at);
        out.push_str(before);
        let after = after.get(1..)?;
        if let Some(after) = after.strip_prefix('$') {
            out.push('$');
            rest = after;
        } else {
            let (name, after) = after.strip_prefix('{')?.split_once('}')?;
            out.push_str(&variable(name)?);
            rest = after;
        }
    }
    out.push_str(rest);
    Some(out)
}

/// Audit records: any bytes as the kernel's audit multicast delivered them (netlink messages
/// whose text a command's paths reach, hex-encoded or quoted) through the sandbox's denial
/// reader; it returns, and what a call keeps stays within its bounds (`sandbox::denials`).
pub fn audit_records(data: &[u8]) {
    crate::sandbox::denials::fuzz(data);
}

/// Redactor: differential. The input picks two secrets (of one length, or the second one
/// longer), which edges of the output are cuts, and the output (over a three-letter alphabet
/// when asked, so secrets overlap and half-occur often). Each redaction is what the rule says
/// (an independent, naive reading of it), and for secrets of one length the two redacted
/// outputs differ only where one of them occurs whole: the property the redaction oracle
/// broke.
pub fn redactor(data: &[u8]) {
    let [length, flags, rest @ ..] = data else {
        return;
    };
    let first_len = usize::from(length % 12).saturating_add(4);
    let second_len = if flags & 0x08 == 0 {
        first_len
    } else {
        first_len.saturating_add(usize::from(length >> 4).saturating_add(1))
    };
    let small = flags & 0x04 != 0;
    let letter = |byte: u8| {
        if small {
            b'a'.saturating_add(byte % 3)
        } else {
            (byte % 95).saturating_add(b' ')
        }
    };
    let Some((first, rest)) = rest.split_at_checked(first_len) else {
        return;
    };
    let Some((second, output)) = rest.split_at_checked(second_len) else {
        return;
    };
    let secret =
        |bytes: &[u8]| -> String { bytes.iter().map(|b| char::from(letter(*b))).collect() };
    let (first, second) = (secret(first), secret(second));
    let mut output: Vec<u8> = if small {
        output.iter().map(|b| letter(*b)).collect()
    } else {
        output.to_vec()
    };
    // Plant whole secrets where asked: the fuzzer need not find them by itself.
    for (bit, planted) in [(0x10, &first), (0x20, &second)] {
        if flags & bit != 0 {
            let at = usize::from(*length).min(output.len());
            output.splice(at..at, planted.bytes());
        }
    }
    let cut = crate::secrets::Cut {
        start: flags & 0x01 != 0,
        end: flags & 0x02 != 0,
    };
    if let Err(broken) = redaction_holds(&output, &first, &second, cut) {
        fail(&broken.to_string());
    }
    // The proxy's names (lowercased before they are kept): one without a secret in it, in
    // any case, comes back unchanged.
    let name = String::from_utf8_lossy(&output).to_ascii_lowercase();
    let shown = redactor_of(&[first.as_str(), second.as_str()]).redact_name(&name);
    let holds_one = [&first, &second]
        .iter()
        .any(|secret| name.contains(&secret.to_ascii_lowercase()));
    if !holds_one && shown != name {
        fail(&format!("{name:?} holds no secret but became {shown:?}"));
    }
}

/// A property of the redaction broken, in a sentence with the output and the secrets.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Violation(String);

/// Whether redacting `output` follows the rule (see [`crate::secrets::Redactor`]) for
/// `first`, `second` and both, and, when they have one length, whether the two outputs differ
/// only where one of them occurs whole.
///
/// # Errors
///
/// What was broken.
pub fn redaction_holds(
    output: &[u8],
    first: &str,
    second: &str,
    cut: crate::secrets::Cut,
) -> Result<(), Violation> {
    let redact = |output: &[u8], secrets: &[&str], cut| redactor_of(secrets).redact(output, cut);
    for secrets in [&[first][..], &[second], &[first, second]] {
        let got = redact(output, secrets, cut);
        let expected = redaction_by_the_rule(output, secrets, cut);
        if got != expected {
            return Err(Violation(format!(
                "{secrets:?} {cut:?} {:?}: got {:?}, the rule says {:?}",
                String::from_utf8_lossy(output),
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&expected)
            )));
        }
    }
    if first.len() == second.len() {
        redaction_differs_only_at_secrets(output, first, second, cut, redact)?;
    }
    Ok(())
}

/// The differential property, for any redaction function `redact(output, secrets, cut)`:
/// with `first` and then `second` (one length), the redacted outputs both hold, in order and
/// nothing between them but what covered bytes became, every run of the bytes shown that no
/// occurrence of either secret covers; so they differ only where a secret occurs whole.
///
/// # Errors
///
/// What was broken.
pub fn redaction_differs_only_at_secrets(
    output: &[u8],
    first: &str,
    second: &str,
    cut: crate::secrets::Cut,
    redact: impl Fn(&[u8], &[&str], crate::secrets::Cut) -> Vec<u8>,
) -> Result<(), Violation> {
    let covered = covered_by(output, &[first, second]);
    let (lo, hi) = shown_range(output.len(), window_of(&[first, second]), cut);
    // The template: runs of uncovered bytes, and gaps where covered runs are.
    let mut parts: Vec<Option<&[u8]>> = Vec::new();
    let mut at = lo;
    while at < hi {
        let is_covered = covered.get(at).copied().unwrap_or(false);
        let mut end = at;
        while end < hi && covered.get(end).copied().unwrap_or(false) == is_covered {
            end = end.saturating_add(1);
        }
        parts.push(if is_covered {
            None
        } else {
            output.get(at..end)
        });
        at = end;
    }
    for secret in [first, second] {
        let got = redact(output, &[secret], cut);
        if !fits_template(&got, &parts) {
            return Err(Violation(format!(
                "with {secret:?} {cut:?}, {:?} became {:?}, which does not keep the text that no \
                 whole secret covers",
                String::from_utf8_lossy(output),
                String::from_utf8_lossy(&got),
            )));
        }
    }
    Ok(())
}

/// Whether `text` is the template's runs in order, each gap (`None`) standing for one or more
/// bytes, the first and last runs anchored at the ends.
fn fits_template(text: &[u8], parts: &[Option<&[u8]>]) -> bool {
    let mut at = 0_usize;
    let mut gap = false;
    let last = parts.len().saturating_sub(1);
    for (index, part) in parts.iter().enumerate() {
        let Some(run) = part else {
            gap = true;
            continue;
        };
        let from = if gap { at.saturating_add(1) } else { at };
        let found = if index == last {
            let start = text.len().checked_sub(run.len());
            start.filter(|start| *start >= from && text.get(*start..) == Some(*run))
        } else if gap {
            text.get(from..)
                .and_then(|rest| memchr::memmem::find(rest, run))
                .and_then(|offset| offset.checked_add(from))
        } else {
            (text.get(at..at.saturating_add(run.len())) == Some(*run)).then_some(at)
        };
        let Some(start) = found else {
            return false;
        };
        at = start.saturating_add(run.len());
        gap = false;
    }
    if gap {
        at < text.len()
    } else {
        at == text.len()
    }
}

/// The rule of [`crate::secrets::Redactor`], read naively: mark every byte inside an
/// occurrence, show `lo..hi`, one marker per run of marked bytes.
fn redaction_by_the_rule(output: &[u8], secrets: &[&str], cut: crate::secrets::Cut) -> Vec<u8> {
    let covered = covered_by(output, secrets);
    let (lo, hi) = shown_range(output.len(), window_of(secrets), cut);
    let mut text = Vec::new();
    let mut in_run = false;
    for index in lo..hi {
        if covered.get(index).copied().unwrap_or(false) {
            if !in_run {
                text.extend_from_slice(crate::secrets::MARKER.as_bytes());
            }
            in_run = true;
        } else {
            text.extend(output.get(index).copied());
            in_run = false;
        }
    }
    text
}

/// Which bytes of `output` lie inside an occurrence of one of `secrets`.
fn covered_by(output: &[u8], secrets: &[&str]) -> Vec<bool> {
    let mut covered = vec![false; output.len()];
    for secret in secrets
        .iter()
        .map(|s| s.as_bytes())
        .filter(|s| !s.is_empty())
    {
        for start in 0..output.len() {
            let end = start.saturating_add(secret.len());
            if output.get(start..end) == Some(secret) {
                for flag in covered.get_mut(start..end).into_iter().flatten() {
                    *flag = true;
                }
            }
        }
    }
    covered
}

/// The window the rule withholds beside a cut: the longest secret, rounded up to 64 bytes.
fn window_of(secrets: &[&str]) -> usize {
    let longest = secrets.iter().map(|s| s.len()).max().unwrap_or(0);
    longest.div_ceil(64).saturating_mul(64)
}

/// The bytes shown of `len` kept ones: `window` withheld beside each cut.
fn shown_range(len: usize, window: usize, cut: crate::secrets::Cut) -> (usize, usize) {
    let lo = if cut.start { window.min(len) } else { 0 };
    let hi = if cut.end {
        len.saturating_sub(window)
    } else {
        len
    };
    (lo, hi.max(lo))
}

fn redactor_of(secrets: &[&str]) -> crate::secrets::Redactor {
    let secrets: Vec<crate::secrets::Secret> = secrets
        .iter()
        .map(|value| {
            crate::secrets::Secret::new("FUZZ".to_owned(), secrecy::SecretString::from(*value))
        })
        .collect();
    crate::secrets::Redactor::new(&secrets)
}

#[expect(clippy::panic, reason = "a fuzz finding is reported by panicking")]
fn fail(broken: &str) -> ! {
    panic!("{broken}")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    use std::path::{Path, PathBuf};

    include!("../../../fuzz/replay.rs");

    #[test]
    fn the_entry_points_accept_their_seeds() {
        manifest(crate::manifest::DEFAULT_MANIFEST.as_bytes());
        manifest(b"[[tool]]\nname = 1");
        argv(br#"{"word": "a b; $(x)", "verbose": true, "tags": ["-x", "y"], "rest": "-rf", "files": ["f"]}"#);
        argv(br#"{"word": "-rf"}"#);
    }

    #[test]
    #[expect(
        clippy::print_stdout,
        reason = "the replay count is what the test reports"
    )]
    fn corpus_replays_policy() {
        let replayed = replay("policy", policy);
        let corpus =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/policy");
        let mut loaded = 0;
        for entry in std::fs::read_dir(&corpus).unwrap() {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            let text = String::from_utf8_lossy(&data);
            let parsed = crate::manifest::parse(&text, "p.toml", &scratch().root);
            // The seeds written to reach the policy (one per shape of tool) must keep loading.
            let name = path.file_name().unwrap().to_string_lossy();
            if name.starts_with("loads-") {
                assert!(parsed.is_ok(), "{name}: {}", parsed.unwrap_err());
            }
            loaded += usize::from(parsed.is_ok());
        }
        println!("{loaded} of the policy seeds load as manifests");
        assert!(
            replayed > 0 && loaded > 0,
            "{replayed} seeds, {loaded} load"
        );
    }

    const GRANTS: &str = r#"
[[tool]]
name = "grants"
description = "reads, writes and runs what it declares"
command = ["bin/tool", "{file}"]
workdir = "work"
read = ["docs"]
write = ["out"]
exec = ["cat"]
resources = { memory_mib = 128, cpu_seconds = 5, disk_files = 7 }
args.file = { type = "path", within = "data" }
accept_risk = ["unknown_program"]
"#;

    /// A tool that may write its whole workdir, which holds `.git`, `.envrc` and
    /// `data/.vscode`.
    const CHECKOUT: &str = r#"
[[tool]]
name = "checkout"
description = "edits its checkout"
command = ["bin/tool"]
workdir = "work"
write = ["."]
accept_risk = ["unknown_program"]
"#;

    /// The policy of [`GRANTS`], what its TOML declares, and the paths it names.
    fn grants() -> (Policy, String, Expected, Vec<PathBuf>) {
        let tree = scratch();
        let manifest = crate::manifest::parse(GRANTS, "grants.toml", &tree.root).unwrap();
        let confinement = manifest.tools[0].sandbox.clone().unwrap();
        let raw: toml::Table = GRANTS.parse().unwrap();
        let expected = Expected::of(&raw, &tree.root);
        let named = named(&raw, &tree.root, &expected);
        let expected = expected[0].clone().unwrap();
        (
            confinement.policy().clone(),
            confinement.encoded(),
            expected,
            named,
        )
    }

    fn broken(change: impl FnOnce(&mut Policy)) -> Option<Breach> {
        let (mut policy, _, expected, named) = grants();
        change(&mut policy);
        let encoded = serde_json::to_string(&policy).unwrap();
        breach(&policy, &encoded, &expected, &named, scratch())
    }

    #[test]
    fn the_policy_the_loader_builds_keeps_every_rule() {
        let (policy, encoded, expected, named) = grants();
        let root = &scratch().root;
        assert_eq!(expected.workdir, root.join("work"));
        assert_eq!(expected.roots, vec![root.join("work/data")]);
        assert_eq!(expected.write, vec![root.join("work/out")]);
        assert_eq!(
            expected.resources,
            [None, Some(128), Some(5), None, None, None, None, Some(7)]
        );
        assert_eq!(
            breach(&policy, &encoded, &expected, &named, scratch()),
            None
        );
    }

    #[test]
    fn a_grant_of_the_parent_of_a_within_root_breaks_rule_one() {
        let parent = scratch().root.clone();
        assert_eq!(
            broken(|policy| policy.read.push(parent.clone())),
            Some(Breach::Undeclared("read", parent))
        );
    }

    #[test]
    fn a_writable_directory_beyond_the_declared_or_in_the_system_breaks_rule_two() {
        let data = scratch().root.join("work/data");
        assert_eq!(
            broken(|policy| policy.write.push(data.clone())),
            Some(Breach::Undeclared("write", data))
        );
        // A declared directory that is a system one is refused too.
        let (mut policy, _, mut expected, named) = grants();
        let share = std::fs::canonicalize("/usr/share").unwrap();
        expected.write.push(share.clone());
        policy.write.push(share.clone());
        let encoded = serde_json::to_string(&policy).unwrap();
        assert_eq!(
            breach(&policy, &encoded, &expected, &named, scratch()),
            Some(Breach::WritesSystem(share))
        );
    }

    #[test]
    fn network_without_its_declaration_breaks_rule_three() {
        assert_eq!(
            broken(|policy| policy.network = true),
            Some(Breach::Network)
        );
    }

    #[test]
    fn a_resource_from_another_field_or_past_the_default_breaks_rule_four() {
        assert_eq!(
            broken(|policy| policy.resources.cpu_seconds = policy.resources.memory_mib),
            Some(Breach::Resource("cpu_seconds"))
        );
        assert_eq!(
            broken(|policy| policy.resources.open_files += 1),
            Some(Breach::Resource("open_files"))
        );
    }

    #[test]
    fn a_path_outside_the_tree_the_manifest_never_named_breaks_rule_five() {
        let (mut policy, _, mut expected, named) = grants();
        let outside = scratch().outside.clone();
        expected.read.push(outside.clone());
        policy.read.push(outside.clone());
        let encoded = serde_json::to_string(&policy).unwrap();
        assert_eq!(
            breach(&policy, &encoded, &expected, &named, scratch()),
            Some(Breach::Unnamed(outside))
        );
    }

    #[test]
    fn a_writable_checkout_keeps_its_later_code_read_only_in_the_view() {
        let tree = scratch();
        let manifest = crate::manifest::parse(CHECKOUT, "checkout.toml", &tree.root).unwrap();
        let policy = manifest.tools[0].sandbox.clone().unwrap().policy().clone();
        assert_eq!(view_breach(&policy), None);
        let plan = crate::sandbox::mounts::plan(&policy);
        for protected in [".git", ".envrc", "data/.vscode"] {
            let path = tree.root.join("work").join(protected);
            assert!(
                plan.contains(&(path, crate::sandbox::mounts::Access::ReadOnly)),
                "{plan:?}"
            );
        }
    }

    #[test]
    fn a_link_the_host_does_not_have_or_inside_a_grant_breaks_rule_eight() {
        let inside = scratch().root.join("work/made-up");
        assert_eq!(
            broken(|policy| policy.links.push((inside.clone(), PathBuf::from("/etc")))),
            Some(Breach::Link(inside))
        );
        let (policy, ..) = grants();
        let bin = policy
            .links
            .iter()
            .find(|(link, _)| link == Path::new("/bin"));
        if let Some((link, _)) = bin {
            let forged = link.clone();
            assert_eq!(
                broken(|policy| {
                    for entry in &mut policy.links {
                        if entry.0 == forged {
                            entry.1 = PathBuf::from("/root");
                        }
                    }
                }),
                Some(Breach::Link(forged))
            );
        }
    }

    #[test]
    fn a_policy_the_launcher_would_decode_differently_breaks_rule_six() {
        let (policy, encoded, expected, named) = grants();
        let other = encoded.replacen("\"network\":false", "\"network\":true", 1);
        assert_ne!(other, encoded);
        assert_eq!(
            breach(&policy, &other, &expected, &named, scratch()),
            Some(Breach::RoundTrip)
        );
    }

    #[test]
    fn a_path_that_is_not_canonical_or_a_forged_system_entry_is_caught() {
        let link = scratch().root.join("work/link");
        assert_eq!(
            broken(|policy| policy.read.push(link.clone())),
            Some(Breach::NotCanonical(link))
        );
        let docs = scratch().root.join("docs");
        assert_eq!(
            broken(|policy| {
                policy.read.insert(0, docs.clone());
                policy.system_entries += 1;
            }),
            Some(Breach::SystemList(docs))
        );
    }

    #[test]
    fn the_scratch_tree_is_one_per_user_made_again_the_same() {
        let uid = rustix::process::getuid().as_raw();
        let tree = scratch();
        let name = format!("airlock-fuzz-policy-{uid}-v{SCRATCH_LAYOUT}");
        assert_eq!(tree.root.file_name(), Some(std::ffi::OsStr::new(&name)));
        let again = make_scratch().unwrap();
        assert_eq!((&again.root, &again.outside), (&tree.root, &tree.outside));
        assert_eq!(
            std::fs::read_link(tree.root.join("work/link")).unwrap(),
            Path::new("../docs")
        );
        assert_eq!(
            std::fs::read(tree.root.join("bin/tool")).unwrap(),
            b"#!/bin/sh\necho tool\n"
        );
    }

    #[test]
    fn policy_json_round_trips_or_fails() {
        let (_, encoded, ..) = grants();
        policy_json(encoded.as_bytes());
        policy_json(b"{\"read\":[]}");
        policy_json(b"not json");
    }

    #[test]
    fn corpus_replays_manifest() {
        assert!(replay("manifest", manifest) > 0);
    }

    #[test]
    fn corpus_replays_argv() {
        assert!(replay("argv", argv) > 0);
    }

    #[test]
    fn corpus_replays_audit_records() {
        assert!(replay("audit_records", audit_records) > 0);
    }
}
