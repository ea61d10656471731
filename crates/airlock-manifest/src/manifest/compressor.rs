//! The compressor GNU tar runs by itself: its compression options (`-z`, `--xz`, `-a`,
//! `-I PROG`, …) make it start `/bin/sh -c PROG`, so the tool's sandbox must let it execute
//! the shell and the compressor, or the call fails with "Cannot exec: Permission denied".
//!
//! This module reads the literals of a tar template and names what they need; `checked`
//! compares that with the tool's `exec` grants and refuses the tool with the `exec` line to
//! write. It trusts the template (operator text) and grants nothing itself: what a sandboxed
//! command may execute stays written in the manifest.

use std::path::Path;

use super::template::Element;

/// What a tar template makes tar run through the shell.
#[derive(Debug, Eq, PartialEq)]
pub(super) struct Compressor {
    /// The option that makes it, as written (`--gzip`, `-z`, `-a`).
    pub(super) option: String,
    /// The compressor's program name, when the template fixes it (`-a` with an archive name
    /// that a value chooses does not).
    pub(super) program: Option<String>,
}

/// The shell GNU tar starts its compressor with, by this path (`exec = ["sh"]` grants it).
pub(super) const SHELL: &str = "/bin/sh";

/// Long options that choose a compressor, and the program each runs.
const LONG: &[(&str, &str)] = &[
    ("--gzip", "gzip"),
    ("--gunzip", "gzip"),
    ("--ungzip", "gzip"),
    ("--bzip2", "bzip2"),
    ("--xz", "xz"),
    ("--zstd", "zstd"),
    ("--lzip", "lzip"),
    ("--lzma", "lzma"),
    ("--lzop", "lzop"),
    ("--compress", "compress"),
    ("--uncompress", "compress"),
];

/// Short options that choose a compressor.
const SHORT: &[(char, &str)] = &[
    ('z', "gzip"),
    ('j', "bzip2"),
    ('J', "xz"),
    ('Z', "compress"),
];

/// Short options of GNU tar that take a value: in a bundle, what follows one is its value.
const SHORT_WITH_VALUE: &str = "bCfFgHIKLNTVX";

/// Archive suffixes `-a` (`--auto-compress`) reads, and the program each chooses.
const SUFFIXES: &[(&str, &str)] = &[
    (".tar.gz", "gzip"),
    (".tgz", "gzip"),
    (".taz", "gzip"),
    (".gz", "gzip"),
    (".tar.Z", "compress"),
    (".taZ", "compress"),
    (".Z", "compress"),
    (".tbz2", "bzip2"),
    (".tbz", "bzip2"),
    (".tz2", "bzip2"),
    (".bz2", "bzip2"),
    (".tlz", "lzma"),
    (".lzma", "lzma"),
    (".lz", "lzip"),
    (".lzo", "lzop"),
    (".txz", "xz"),
    (".xz", "xz"),
    (".tzst", "zstd"),
    (".zst", "zstd"),
];

/// What `program` (GNU tar, by the name written or resolved) runs through the shell given
/// `template`, or `None` for another program or a tar template with no compression option.
pub(super) fn of_tar(program: &Path, template: &[Element]) -> Option<Compressor> {
    let is_tar = |path: &Path| {
        path.file_name()
            .is_some_and(|name| name == "tar" || name == "gtar")
    };
    let resolved = std::fs::canonicalize(program).ok();
    if !is_tar(program) && !resolved.as_deref().is_some_and(is_tar) {
        return None;
    }
    let literal = |at: usize| match template.get(at) {
        Some(Element::Literal(text)) => Some(text.as_str()),
        _ => None,
    };
    let mut auto: Option<String> = None;
    let mut archive: Option<Option<&str>> = None;
    let mut found: Option<Compressor> = None;
    let mut at = 0_usize;
    while let Some(element) = template.get(at) {
        let next = at.saturating_add(1);
        let Element::Literal(text) = element else {
            at = next;
            continue;
        };
        if text == "--" {
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            let option = format!("--{name}");
            let takes_next = value.is_none() && matches!(name, "use-compress-program" | "file");
            let value = if takes_next {
                Some(literal(next))
            } else {
                value.map(Some)
            };
            match name {
                "use-compress-program" => {
                    let program = value.flatten().and_then(first_word);
                    found.get_or_insert(Compressor { option, program });
                }
                "auto-compress" => auto = auto.or(Some(option)),
                "file" => archive = value,
                _ => {
                    if let Some((_, program)) = LONG.iter().find(|(long, _)| *long == option) {
                        found.get_or_insert(Compressor {
                            option,
                            program: Some((*program).to_owned()),
                        });
                    }
                }
            }
            at = if takes_next {
                next.saturating_add(1)
            } else {
                next
            };
            continue;
        }
        // Short options: `-czf`, or the first element written without its dash (`czf`).
        let letters = match text.strip_prefix('-') {
            Some(letters) => letters,
            None if at == 0 => text.as_str(),
            None => {
                at = next;
                continue;
            }
        };
        let mut skip = 0_usize;
        for (index, letter) in letters.char_indices() {
            let option = format!("-{letter}");
            if let Some((_, program)) = SHORT.iter().find(|(short, _)| *short == letter) {
                found.get_or_insert(Compressor {
                    option,
                    program: Some((*program).to_owned()),
                });
                continue;
            }
            if letter == 'a' {
                auto = auto.or(Some(option));
                continue;
            }
            if SHORT_WITH_VALUE.contains(letter) {
                let rest = letters
                    .get(index.saturating_add(letter.len_utf8())..)
                    .unwrap_or_default();
                // Attached (`-fNAME`), else the next element (old style: one each, in order).
                let value = if rest.is_empty() {
                    skip = skip.saturating_add(1);
                    literal(at.saturating_add(skip))
                } else {
                    Some(rest)
                };
                if letter == 'f' {
                    archive = Some(value);
                }
                if letter == 'I' {
                    found.get_or_insert(Compressor {
                        option,
                        program: value.and_then(first_word),
                    });
                }
                if !rest.is_empty() {
                    break;
                }
            }
        }
        at = next.saturating_add(skip);
    }
    if found.is_some() {
        return found;
    }
    auto.map(|option| Compressor {
        option,
        program: archive.flatten().and_then(|name| {
            SUFFIXES
                .iter()
                .find(|(suffix, _)| name.ends_with(suffix))
                .map(|(_, program)| (*program).to_owned())
        }),
    })
}

/// The program a `--use-compress-program` value starts: its first word.
fn first_word(value: &str) -> Option<String> {
    value.split_whitespace().next().map(str::to_owned)
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

    fn tar(words: &[&str]) -> Option<(String, Option<String>)> {
        of_tar(Path::new("/usr/bin/tar"), &literals(words))
            .map(|found| (found.option, found.program))
    }

    fn runs(option: &str, program: &str) -> Option<(String, Option<String>)> {
        Some((option.to_owned(), Some(program.to_owned())))
    }

    #[test]
    fn each_compression_option_names_its_compressor() {
        assert_eq!(
            tar(&["--gzip", "-cf", "a.tgz", "src"]),
            runs("--gzip", "gzip")
        );
        assert_eq!(tar(&["-czf", "a.tgz", "src"]), runs("-z", "gzip"));
        assert_eq!(tar(&["cjf", "a.tbz", "src"]), runs("-j", "bzip2"));
        assert_eq!(tar(&["-cJf", "a.txz", "src"]), runs("-J", "xz"));
        assert_eq!(tar(&["--zstd", "-xf", "a"]), runs("--zstd", "zstd"));
        assert_eq!(tar(&["--lzip", "-xf", "a"]), runs("--lzip", "lzip"));
        assert_eq!(tar(&["--lzma", "-xf", "a"]), runs("--lzma", "lzma"));
        assert_eq!(tar(&["--lzop", "-xf", "a"]), runs("--lzop", "lzop"));
        assert_eq!(
            tar(&["--use-compress-program=pigz -9", "-cf", "a", "src"]),
            runs("--use-compress-program", "pigz")
        );
        assert_eq!(
            tar(&["-I", "zstd -19", "-cf", "a", "src"]),
            runs("-I", "zstd")
        );
        assert_eq!(tar(&["-cf", "a", "-Ipigz", "src"]), runs("-I", "pigz"));
    }

    #[test]
    fn auto_compress_reads_the_archive_suffix() {
        assert_eq!(tar(&["-caf", "out/a.tar.xz", "src"]), runs("-a", "xz"));
        assert_eq!(
            tar(&["--auto-compress", "--file=a.tgz", "src"]),
            runs("--auto-compress", "gzip")
        );
        assert_eq!(tar(&["-a", "-c", "-f", "a.zst", "src"]), runs("-a", "zstd"));
        // A name a value chooses: the compressor is not known.
        let template = [
            Element::Literal("-caf".to_owned()),
            Element::Value {
                arg: 0,
                prefix: String::new(),
                suffix: String::new(),
                after_double_dash: false,
            },
        ];
        assert_eq!(
            of_tar(Path::new("/usr/bin/tar"), &template),
            Some(Compressor {
                option: "-a".to_owned(),
                program: None
            })
        );
        // Without a compressing suffix, -a runs nothing.
        assert_eq!(
            tar(&["-caf", "a.tar", "src"]).and_then(|found| found.1),
            None
        );
    }

    #[test]
    fn a_letter_inside_a_value_is_no_option() {
        // `-fz`: the archive is named `z`.
        assert_eq!(tar(&["-c", "-fz", "src"]), None);
        // `-C zdir`, `-T j.txt`: values, not bundles.
        assert_eq!(tar(&["-C", "zdir", "-cf", "a.tar", "."]), None);
        assert_eq!(tar(&["-cf", "a.tar", "-T", "jz.txt"]), None);
        assert_eq!(tar(&["-cf", "a.tar", "--", "-z"]), None);
        assert_eq!(tar(&["-cf", "a.tar", "src"]), None);
    }

    #[test]
    fn other_programs_run_no_compressor() {
        assert_eq!(of_tar(Path::new("/usr/bin/ls"), &literals(&["-z"])), None);
    }
}
