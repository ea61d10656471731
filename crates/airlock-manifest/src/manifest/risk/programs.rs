//! The programs airlock knows: their names, and how each reads its arguments (data only,
//! an interpreter's option grammar, subcommands, launchers, expression and assignment
//! operands, response files). `super` turns a tool's program and template into risks and
//! call-time rules from this table; a program that is not in it is unknown, and treated as
//! such.

use std::path::Path;

use super::{Assignments, OperandRules};

/// The names a program goes by: the file name as written and the one its path resolves to,
/// lowercased, without `.exe`; and each without a version suffix (`python3.11` → `python`,
/// `clang-15` → `clang`).
pub(super) struct Names {
    pub(super) exact: Vec<String>,
    pub(super) trimmed: Vec<String>,
}

impl Names {
    pub(super) fn of(program: &Path) -> Self {
        let mut exact = Vec::new();
        let mut trimmed = Vec::new();
        let resolved = std::fs::canonicalize(program).ok();
        for path in [Some(program), resolved.as_deref()].into_iter().flatten() {
            if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                let name = name.to_ascii_lowercase();
                let name = name.strip_suffix(".exe").unwrap_or(&name).to_owned();
                let base = name
                    .trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
                    .trim_end_matches('-');
                trimmed.push(base.to_owned());
                exact.push(name);
            }
        }
        Self { exact, trimmed }
    }

    /// How the program matches `known`, if it does. An exact name is a match. A name without
    /// its version suffix (`python3.11`, `gcc-12`) is one too, except for a program airlock
    /// reads as taking data only: `cat2` is not `cat`. A name with a target prefix
    /// (`arm-none-eabi-gcc`) adds the rules of a program that reads operands as more than data,
    /// but does not make the program known: `my-as` may be anything.
    pub(super) fn matching(&self, known: &Program) -> Option<Match> {
        let names = known.names;
        if names
            .iter()
            .any(|name| self.exact.iter().any(|n| n == name))
        {
            return Some(Match::Exact);
        }
        let adds_checks = match &known.kind {
            Kind::Plain(plain) => plain.operands.any(),
            Kind::Interpreter(_) | Kind::Launcher => true,
        };
        if !adds_checks {
            return None;
        }
        if names
            .iter()
            .any(|name| self.trimmed.iter().any(|n| n == name))
        {
            return Some(Match::Exact);
        }
        let prefixed = |name: &&str| {
            self.exact
                .iter()
                .chain(&self.trimmed)
                .any(|n| n.strip_suffix(name).is_some_and(|head| head.ends_with('-')))
        };
        (matches!(&known.kind, Kind::Plain(_)) && names.iter().any(prefixed)).then_some(Match::Near)
    }
}

/// How a program matched a known one.
#[derive(Clone, Copy, Eq, PartialEq)]
pub(super) enum Match {
    /// By name (or, for an interpreter or a launcher, by name without a version suffix).
    Exact,
    /// By a near name: its rules apply, but the program is not known.
    Near,
}

/// A program airlock knows.
pub(super) struct Program {
    pub(super) names: &'static [&'static str],
    pub(super) kind: Kind,
}

/// How a known program reads its arguments.
pub(super) enum Kind {
    /// Options until `--` (or its first operand), then operands; operands are data unless
    /// `operands` says otherwise.
    Plain(Plain),
    /// A shell or interpreter: it reads code.
    Interpreter(Grammar),
    /// It runs its arguments as a command.
    Launcher,
}

pub(super) struct Plain {
    /// What it reads in operands besides data.
    pub(super) operands: OperandRules,
    /// Its options (long, or one letter) whose value is run as a command or read as more
    /// options.
    pub(super) runs: &'static [&'static str],
    /// Letters of its short options whose value is run (bundled too: `-xI {x}`).
    pub(super) runs_short: &'static str,
    /// Options whose value, unless it is a path, can name a remote file (`host:file`) that the
    /// program reaches by running a remote shell (`tar -f`).
    pub(super) remote: &'static [&'static str],
    /// Options after which the following elements are a command (`find -exec … ;`).
    pub(super) runs_following: &'static [&'static str],
    /// Options known to take the next element as their value, whatever it starts with.
    pub(super) takes_value: &'static [&'static str],
    /// Whether its first argument is options even without a leading `-` (`tar xf`).
    pub(super) first_is_options: bool,
    /// Its subcommands, if it has them.
    pub(super) subcommands: Option<&'static Subcommands>,
}

/// A program with subcommands (git).
pub(super) struct Subcommands {
    /// Options before the subcommand that take the next element (`git -C dir`).
    pub(super) global_values: &'static [&'static str],
    /// Subcommands whose operands are data (revisions, paths, text) and that run nothing
    /// their arguments name.
    pub(super) known: &'static [&'static str],
    /// Per subcommand, options whose value is run as a command.
    pub(super) runs: &'static [(&'static str, &'static [&'static str])],
    /// Per subcommand, options known to take the next element as their value.
    pub(super) takes_value: &'static [(&'static str, &'static [&'static str])],
}

/// How an interpreter reads its options, as far as airlock relies on it. Option letters and
/// names not listed here count as code.
pub(super) struct Grammar {
    /// Where its code comes from.
    pub(super) source: Source,
    /// Letters whose value (the rest of the element, or the next) is code.
    pub(super) code: &'static str,
    /// Letters that make it read code from stdin.
    pub(super) stdin_code: &'static str,
    /// Letters whose value is a script file to run.
    pub(super) script_file: &'static str,
    /// Letters whose value is a module to run (`python -m json.tool`).
    pub(super) script_module: &'static str,
    /// Letters that take a value (the rest of the element, or the next) that is not code.
    pub(super) value: &'static str,
    /// Letters that take the rest of the element, if any, as their value.
    pub(super) attached: &'static str,
    /// Letters without a value.
    pub(super) flags: &'static str,
    /// Long options whose value is code.
    pub(super) code_long: &'static [&'static str],
    /// Long options whose value is a script file.
    pub(super) script_long: &'static [&'static str],
    /// Long options that take a value that is not code.
    pub(super) value_long: &'static [&'static str],
    /// Long options without a value.
    pub(super) flags_long: &'static [&'static str],
    /// What it reads in operands besides data.
    pub(super) operands: OperandRules,
}

/// Where an interpreter reads its program.
pub(super) enum Source {
    /// The first operand is a script file; without one, stdin is the script.
    ScriptFile,
    /// The first operand is program text unless an option named a program file; stdin and
    /// the other operands are input.
    ProgramText,
    /// Every argument and stdin may be code (`sqlite3`, `ed`, `gdb`, `vim`, `dc`).
    Everything,
}

pub(super) const PLAIN: Plain = Plain {
    operands: OperandRules::DATA,
    runs: &[],
    runs_short: "",
    remote: &[],
    runs_following: &[],
    takes_value: &[],
    first_is_options: false,
    subcommands: None,
};

pub(super) const NO_GRAMMAR: Grammar = Grammar {
    source: Source::Everything,
    code: "",
    stdin_code: "",
    script_file: "",
    script_module: "",
    value: "",
    attached: "",
    flags: "",
    code_long: &[],
    script_long: &[],
    value_long: &[],
    flags_long: &[],
    operands: OperandRules::DATA,
};

pub(super) const SHELL: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "c",
    stdin_code: "is",
    value: "oO",
    flags: "abefhkmnptuvxBCEHPTlr",
    code_long: &["--rcfile", "--init-file", "--command"],
    flags_long: &[
        "--norc",
        "--noprofile",
        "--posix",
        "--noediting",
        "--restricted",
        "--login",
        "--verbose",
    ],
    ..NO_GRAMMAR
};

pub(super) const PYTHON: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "c",
    stdin_code: "i",
    script_module: "m",
    value: "WXQ",
    flags: "bBdEIOPqsSuvxRh",
    ..NO_GRAMMAR
};

pub(super) const PERL: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "eE",
    value: "IMm",
    attached: "ixdDCF",
    flags: "acnpsStTUwWXlvh0123456789",
    ..NO_GRAMMAR
};

pub(super) const RUBY: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "e",
    value: "IrCE",
    attached: "ixFKT0W",
    flags: "acdlnpsSvwyh",
    ..NO_GRAMMAR
};

pub(super) const NODE: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "ep",
    stdin_code: "i",
    value: "r",
    flags: "cvh",
    code_long: &["--eval", "--print", "--interactive"],
    value_long: &["--require", "--import", "--loader", "--experimental-loader"],
    flags_long: &[
        "--no-warnings",
        "--no-deprecation",
        "--enable-source-maps",
        "--trace-warnings",
    ],
    ..NO_GRAMMAR
};

pub(super) const PHP: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "rBREdz",
    stdin_code: "a",
    script_file: "f",
    value: "c",
    flags: "nqhvlsHwe",
    ..NO_GRAMMAR
};

pub(super) const LUA: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "e",
    stdin_code: "i",
    value: "l",
    flags: "vEW",
    ..NO_GRAMMAR
};

pub(super) const TCL: Grammar = Grammar {
    source: Source::ScriptFile,
    ..NO_GRAMMAR
};

pub(super) const EXPECT: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "c",
    stdin_code: "i",
    script_file: "f",
    value: "D",
    flags: "dnNv",
    ..NO_GRAMMAR
};

pub(super) const RSCRIPT: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "e",
    flags_long: &[
        "--vanilla",
        "--no-environ",
        "--no-site-file",
        "--no-init-file",
        "--verbose",
    ],
    ..NO_GRAMMAR
};

pub(super) const JULIA: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "eE",
    stdin_code: "i",
    value: "L",
    flags: "qhv",
    ..NO_GRAMMAR
};

pub(super) const AWK: Grammar = Grammar {
    source: Source::ProgramText,
    code: "el",
    script_file: "fiE",
    value: "FvW",
    attached: "dDopL",
    flags: "bcCgMnNOPrsStVh",
    code_long: &["--source", "--load"],
    script_long: &["--file", "--include", "--exec"],
    value_long: &["--field-separator", "--assign"],
    flags_long: &["--sandbox", "--posix", "--traditional", "--re-interval"],
    operands: OperandRules {
        assignments: Assignments::Named,
        ..OperandRules::DATA
    },
    ..NO_GRAMMAR
};

pub(super) const SED: Grammar = Grammar {
    source: Source::ProgramText,
    code: "e",
    script_file: "f",
    value: "l",
    attached: "i",
    flags: "nrEsuzh",
    code_long: &["--expression"],
    script_long: &["--file"],
    value_long: &["--line-length"],
    flags_long: &[
        "--quiet",
        "--silent",
        "--regexp-extended",
        "--separate",
        "--unbuffered",
        "--null-data",
        "--posix",
        "--sandbox",
        "--debug",
        "--in-place",
        "--follow-symlinks",
    ],
    ..NO_GRAMMAR
};

pub(super) const JQ: Grammar = Grammar {
    source: Source::ProgramText,
    script_file: "f",
    value: "L",
    flags: "nrjacCMSeRhVs",
    script_long: &["--from-file"],
    value_long: &["--indent"],
    flags_long: &[
        "--null-input",
        "--raw-output",
        "--join-output",
        "--ascii-output",
        "--compact-output",
        "--color-output",
        "--monochrome-output",
        "--sort-keys",
        "--exit-status",
        "--raw-input",
        "--slurp",
        "--tab",
        "--seq",
        "--stream",
    ],
    ..NO_GRAMMAR
};

/// git's subcommands that read revisions, paths and text, and run nothing their arguments
/// name. Others (`clone`, `fetch`, `submodule`, `bisect`, `rebase`, `difftool`, `config`, …)
/// are not known: they run helpers, hooks or configured commands.
#[rustfmt::skip]
pub(super) const GIT: Subcommands = Subcommands {
    global_values: &[
        "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
        "--attr-source",
    ],
    known: &[
        "log", "show", "status", "diff", "grep", "blame", "annotate", "ls-files", "ls-tree",
        "rev-parse", "rev-list", "describe", "cat-file", "shortlog", "show-ref", "for-each-ref",
        "name-rev", "diff-tree", "diff-files", "diff-index", "merge-base", "count-objects",
        "whatchanged", "show-branch", "cherry", "range-diff", "check-ignore", "check-attr",
        "version",
    ],
    runs: &[
        ("clone", &["-u", "--upload-pack"]),
        ("ls-remote", &["-u", "--upload-pack"]),
        ("grep", &["-O", "--open-files-in-pager"]),
        ("rebase", &["-x", "--exec"]),
        ("difftool", &["-x", "--extcmd"]),
    ],
    takes_value: &[("grep", &["-e"])],
};

/// Every program airlock knows. A program not listed that gets agent text needs
/// `accept_risk = ["unknown_program"]`.
#[rustfmt::skip]
pub(super) const PROGRAMS: &[Program] = &[
    // Options until `--`, then data: files, patterns, text.
    Program {
        names: &[
            "cat", "head", "tail", "wc", "ls", "stat", "du", "df", "file", "nl", "od", "tac", "rev",
            "fold", "fmt", "paste", "join", "column", "expand", "unexpand", "cut", "tr", "uniq",
            "comm", "diff", "cmp", "shuf", "tsort", "md5sum", "sha1sum", "sha224sum", "sha256sum",
            "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "base32", "base64", "basenc",
            "basename", "dirname", "realpath", "readlink", "pwd", "echo", "printf", "true", "false",
            "sleep", "seq", "numfmt", "factor", "whoami", "uname", "touch", "mkdir", "rmdir", "cp",
            "mv", "rm", "ln", "chmod", "tee", "truncate", "gzip", "gunzip", "zcat", "bzip2",
            "bunzip2", "bzcat", "xz", "unxz", "xzcat",
        ],
        kind: Kind::Plain(PLAIN),
    },
    Program {
        names: &["grep", "egrep", "fgrep"],
        kind: Kind::Plain(Plain { takes_value: &["-e", "--regexp"], ..PLAIN }),
    },
    Program {
        names: &["rg"],
        kind: Kind::Plain(Plain { runs: &["--pre"], takes_value: &["-e", "--regexp"], ..PLAIN }),
    },
    Program {
        names: &["sort"],
        kind: Kind::Plain(Plain { runs: &["--compress-program"], ..PLAIN }),
    },
    Program {
        names: &["tar"],
        kind: Kind::Plain(Plain {
            runs: &[
                "--use-compress-program", "--to-command", "--checkpoint-action", "--info-script",
                "--new-volume-script", "--rsh-command", "--rmt-command",
            ],
            runs_short: "IF",
            remote: &["-f", "--file"],
            first_is_options: true,
            ..PLAIN
        }),
    },
    Program {
        names: &["curl"],
        kind: Kind::Plain(Plain { runs: &["--config"], runs_short: "K", ..PLAIN }),
    },
    Program {
        names: &["git"],
        kind: Kind::Plain(Plain {
            runs: &["-c", "--config-env", "--exec-path"],
            subcommands: Some(&GIT),
            ..PLAIN
        }),
    },
    // Operands read as more than data.
    Program {
        names: &["find", "gfind", "bfs"],
        kind: Kind::Plain(Plain {
            operands: OperandRules { expressions: true, ..OperandRules::DATA },
            runs_following: &["-exec", "-execdir", "-ok", "-okdir"],
            ..PLAIN
        }),
    },
    Program {
        names: &["make", "gmake", "bmake", "pmake", "remake"],
        kind: Kind::Plain(Plain {
            operands: OperandRules { assignments: Assignments::Any, ..OperandRules::DATA },
            runs: &[
                "-f", "--file", "--makefile", "-C", "--directory", "--eval", "-I", "--include-dir",
            ],
            ..PLAIN
        }),
    },
    Program {
        names: &["rake"],
        kind: Kind::Plain(Plain {
            operands: OperandRules { assignments: Assignments::Any, ..OperandRules::DATA },
            runs: &[
                "-f", "--rakefile", "-e", "--execute", "-p", "--execute-print", "-E",
                "--execute-continue", "-I", "--libdir", "-r", "--require", "-C", "--directory",
                "-R", "--rakelibdir",
            ],
            ..PLAIN
        }),
    },
    Program {
        names: &["scons"],
        kind: Kind::Plain(Plain {
            operands: OperandRules { assignments: Assignments::Any, ..OperandRules::DATA },
            runs: &[
                "-f", "--file", "--makefile", "--sconstruct", "-C", "--directory", "-I",
                "--include-dir", "--site-dir",
            ],
            ..PLAIN
        }),
    },
    Program {
        names: &["dd"],
        kind: Kind::Plain(Plain {
            operands: OperandRules { assignments: Assignments::Any, ..OperandRules::DATA },
            ..PLAIN
        }),
    },
    Program {
        names: &[
            "ar", "as", "ld", "gold", "ld.bfd", "ld.gold", "ld.lld", "lld", "objdump", "objcopy",
            "nm", "readelf", "strings", "strip", "size", "addr2line", "c++filt", "cxxfilt",
            "ranlib", "elfedit", "gprof", "windres", "dlltool", "gcc", "g++", "cc", "c++", "cpp",
            "gfortran", "gccgo", "gdc", "clang", "clang++", "clang-cl", "clang-cpp", "rustc",
            "swiftc", "javac", "java", "jar", "javadoc", "jlink", "jpackage", "jdeps", "kotlinc",
            "nvcc", "7z", "7za", "7zr", "llvm-objdump", "llvm-ar", "llvm-nm", "llvm-readelf",
            "llvm-readobj", "llvm-strings", "llvm-strip", "llvm-objcopy", "llvm-size",
            "llvm-symbolizer", "llvm-addr2line", "llvm-cxxfilt", "llvm-ranlib", "llvm-link",
            "llvm-as", "llvm-dis", "llvm-mc", "llc", "opt", "wasm-ld", "ld64.lld", "lld-link",
        ],
        kind: Kind::Plain(Plain {
            operands: OperandRules { response_files: true, ..OperandRules::DATA },
            ..PLAIN
        }),
    },
    // Shells and interpreters.
    Program {
        names: &[
            "sh", "bash", "dash", "zsh", "ksh", "mksh", "yash", "ash", "rbash", "oksh", "posh",
        ],
        kind: Kind::Interpreter(SHELL),
    },
    Program { names: &["python", "pypy"], kind: Kind::Interpreter(PYTHON) },
    Program { names: &["perl"], kind: Kind::Interpreter(PERL) },
    Program { names: &["ruby"], kind: Kind::Interpreter(RUBY) },
    Program { names: &["node", "nodejs"], kind: Kind::Interpreter(NODE) },
    Program { names: &["php"], kind: Kind::Interpreter(PHP) },
    Program { names: &["lua", "luajit"], kind: Kind::Interpreter(LUA) },
    Program { names: &["tclsh", "wish"], kind: Kind::Interpreter(TCL) },
    Program { names: &["expect"], kind: Kind::Interpreter(EXPECT) },
    Program { names: &["rscript"], kind: Kind::Interpreter(RSCRIPT) },
    Program { names: &["julia"], kind: Kind::Interpreter(JULIA) },
    Program {
        names: &["awk", "gawk", "mawk", "nawk", "original-awk"],
        kind: Kind::Interpreter(AWK),
    },
    Program { names: &["sed", "gsed"], kind: Kind::Interpreter(SED) },
    Program { names: &["jq", "gojq", "jaq"], kind: Kind::Interpreter(JQ) },
    Program {
        names: &[
            "sqlite3", "sqlite", "ed", "red", "ex", "vi", "vim", "nvim", "view", "vimdiff", "gvim",
            "emacs", "emacsclient", "gdb", "lldb", "dc", "bc", "m4", "irb", "jshell", "deno",
            "bun", "fish", "csh", "tcsh", "elvish", "nu", "xonsh", "rc", "es", "pwsh",
            "powershell", "cmd", "busybox", "toybox", "osascript", "r", "guile", "racket", "sbcl",
            "clisp", "ocaml", "ghci", "runghc", "runhaskell", "erl", "escript", "elixir", "iex",
            "swipl", "gnuplot", "octave", "maxima", "tex", "latex", "pdflatex", "xelatex",
            "lualatex", "luatex", "groovy", "scala", "kotlin", "clojure", "yq", "mysql", "psql",
            "redis-cli", "mongo", "mongosh",
        ],
        kind: Kind::Interpreter(NO_GRAMMAR),
    },
    // Launchers.
    Program {
        names: &[
            "env", "sudo", "doas", "su", "xargs", "nice", "ionice", "nohup", "timeout", "stdbuf",
            "strace", "ltrace", "chroot", "unshare", "nsenter", "setsid", "flock", "watch", "ssh",
            "parallel", "runuser", "pkexec", "systemd-run", "taskset", "chrt", "prlimit", "setpriv",
            "time", "script", "capsh", "firejail", "bwrap", "docker", "podman", "kubectl",
            "setarch", "linux32", "linux64", "i386", "x86_64", "numactl", "cgexec", "runcon", "sg",
            "newgrp", "unbuffer", "catchsegv", "valgrind", "perf", "chpst", "torsocks",
            "proxychains", "proxychains4", "faketime", "fakeroot", "fakechroot", "nix-shell", "npx",
            "pnpx", "uvx", "pipx", "bunx", "sshpass", "rlwrap", "dbus-run-session", "xvfb-run",
            "eatmydata", "nocache", "daemonize", "start-stop-daemon", "machinectl", "lxc-attach",
            "systemd-nspawn", "nsjail", "minijail0", "tmux", "screen", "at", "batch", "entr",
            "nerdctl", "flatpak", "snap", "rsh", "mosh",
        ],
        kind: Kind::Launcher,
    },
];

/// Long options, of any program, whose value is run as a command (or names one).
#[rustfmt::skip]
pub(super) const VALUE_RUNNING_OPTIONS: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "--to-command", "--use-compress-program",
    "--compress-program", "--checkpoint-action", "--info-script", "--new-volume-script",
    "--rsh-command", "--rmt-command", "--upload-pack", "--receive-pack", "--exec",
    "--config-env", "--exec-path", "--pager", "--editor", "--pre", "--open-files-in-pager",
    "--extcmd", "--rsync-path", "--rsh",
];
