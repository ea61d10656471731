//! Paths a tool's template fixes (`/etc/x`, `--output=out/report.txt`) that its sandbox would
//! not let the command reach, named with the path they resolve to at load instead of failing
//! calls with `ENOENT` or `EACCES`. An output option's value outside the writable directories
//! is refused: no call can write it. A path the view does not hold is a warning: the command
//! cannot reach it, but a program may do without it, and the sandbox's own tests load such
//! shapes to show the wall holds.
//!
//! It trusts the template (operator text) and the policy already built; it reads the file
//! system only to resolve a literal as the command would (against the workdir, links
//! followed where they exist). An output option's value (`--output=…`) is a path; another
//! literal counts as one when it starts with `/`, `./` or `../` and names something that
//! exists or whose directory exists (not `/`): `/api/` as a grep pattern or `/re/` as an awk
//! program is no path.

use std::path::{Component, Path, PathBuf};

use super::rule::Rule;
use super::template::Element;

/// Options whose value is a file the program writes.
const OUTPUT_OPTIONS: &[&str] = &[
    "--output",
    "--output-file",
    "--output-document",
    "--outfile",
    "--out",
    "--log-file",
    "--logfile",
];

/// What the fixed paths of a template would meet.
#[derive(Debug, Default, Eq, PartialEq)]
pub(super) struct Findings {
    /// Why the tool cannot work: an output it may not write.
    pub(super) refusal: Option<Rule>,
    /// Paths it will not reach.
    pub(super) warnings: Vec<String>,
}

/// The fixed paths of `template` out of the command's reach. `visible` is every path the
/// command's view binds; `writable` its writable directories and files.
pub(super) fn look(
    template: &[Element],
    workdir: &Path,
    visible: &[PathBuf],
    writable: &[PathBuf],
) -> Findings {
    let mut found = Findings::default();
    let mut previous: Option<&str> = None;
    for element in template {
        let Element::Literal(text) = element else {
            previous = None;
            continue;
        };
        let (option, value) = match text.split_once('=') {
            Some((option, value)) if option.starts_with("--") => (Some(option), value),
            _ => (
                previous.filter(|option| OUTPUT_OPTIONS.contains(option)),
                text.as_str(),
            ),
        };
        previous = Some(text);
        let writes = option.is_some_and(|option| OUTPUT_OPTIONS.contains(&option));
        let Some(path) = as_path(value, workdir, writes) else {
            continue;
        };
        let shown = path.display();
        if writes && !writable.iter().any(|dir| path.starts_with(dir)) {
            found
                .refusal
                .get_or_insert_with(|| Rule::OutputNotWritable {
                    element: text.clone(),
                    path: path.clone(),
                    writable: writable.to_vec(),
                });
            continue;
        }
        let seen = visible
            .iter()
            .any(|granted| path.starts_with(granted) || granted.starts_with(&path));
        if !seen {
            found.warnings.push(format!(
                "`{text}` names {shown}, which the tool's sandbox does not show it (it sees the \
                 workdir, the path roots, `read`, `exec`, `write` and the system list): a call \
                 that uses it fails; grant it in `read` (or `write`), or leave it out"
            ));
        }
    }
    found
}

/// The path a literal names, resolved as the command would resolve it, when it is one: an
/// output option's value always is (`out/report.txt`), other text when it looks like one.
fn as_path(value: &str, workdir: &Path, output: bool) -> Option<PathBuf> {
    let looks = value.starts_with('/') || value.starts_with("./") || value.starts_with("../");
    if output && !value.is_empty() && value != "-" {
        return Some(resolved(&lexical(&workdir.join(value))));
    }
    if !looks {
        return None;
    }
    let path = lexical(&workdir.join(value));
    let real = resolved(&path);
    let exists = real.exists();
    let parent_exists = real
        .parent()
        .is_some_and(|parent| parent != Path::new("/") && parent.is_dir());
    (exists || parent_exists).then_some(real)
}

/// `path` with `.` and `..` taken out by their text.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) | Component::Normal(_) => {
                out.push(component);
            }
        }
    }
    out
}

/// `path` with its longest existing ancestor made canonical (links followed), the rest as
/// written.
fn resolved(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut head = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(head) {
            return rest.iter().rev().fold(real, |full, name| full.join(name));
        }
        match (head.parent(), head.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                head = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literals(words: &[&str]) -> Vec<Element> {
        words
            .iter()
            .map(|word| Element::Literal((*word).to_owned()))
            .collect()
    }

    /// The refusal, else the first warning.
    fn check(words: &[&str]) -> Option<String> {
        let work = std::env::temp_dir();
        let work = std::fs::canonicalize(work).unwrap();
        let visible = [
            work.clone(),
            PathBuf::from("/usr"),
            PathBuf::from("/dev/null"),
        ];
        let writable = [work.join("out"), PathBuf::from("/dev/null")];
        let found = look(&literals(words), &work, &visible, &writable);
        found
            .refusal
            .map(|rule| rule.to_string())
            .or_else(|| found.warnings.into_iter().next())
    }

    #[test]
    fn an_output_outside_the_writable_directories_is_refused() {
        let why = check(&["--output=/etc/airlock-x"]).unwrap();
        assert!(
            why.starts_with("`--output=/etc/airlock-x` names /etc/airlock-x, which"),
            "{why}"
        );
        assert!(why.contains("does not let it write"), "{why}");
        let why = check(&["--output", "/etc/airlock-x"]).unwrap();
        assert!(
            why.starts_with("`/etc/airlock-x` names /etc/airlock-x"),
            "{why}"
        );
        assert_eq!(check(&["--output=/dev/null"]), None);
        assert_eq!(check(&["--output=out/report.txt"]), None);
        assert_eq!(check(&["--output=-"]), None);
        let why = check(&["--output=report.txt"]).unwrap();
        assert!(why.contains("does not let it write"), "{why}");
    }

    #[test]
    fn a_path_the_view_does_not_hold_is_refused_and_text_that_only_looks_like_one_is_not() {
        assert!(check(&["/etc/passwd"]).is_some_and(|why| why.contains("does not show it")));
        assert_eq!(check(&["/usr/bin"]), None);
        // An ancestor of a granted path is a directory of the view.
        assert_eq!(check(&["/"]), None);
        // A pattern, an awk program: nothing there.
        assert_eq!(check(&["/api/"]), None);
        assert_eq!(check(&["/no-such-airlock-dir/x"]), None);
        assert_eq!(check(&["s/a/b/"]), None);
        // `..` is taken out before the check: out of the workdir.
        let parent = std::fs::canonicalize(std::env::temp_dir())
            .unwrap()
            .parent()
            .map(Path::to_path_buf);
        if parent.as_deref() != Some(Path::new("/")) {
            assert!(check(&["../"]).is_some());
        }
    }
}
