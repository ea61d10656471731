//! `airlock completions SHELL` and `airlock man [COMMAND]`: generated from the clap
//! definitions, so they list exactly the subcommands and flags the program parses.

/// The completion script of `command` for `shell`.
pub(crate) fn completions(mut command: clap::Command, shell: clap_complete::Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "airlock", &mut out);
    out
}

/// The man page (roff) of `command`, or of its subcommand `sub` (`airlock-serve(1)`, as git
/// names its pages); `None` when there is no such subcommand.
pub(crate) fn man_page(
    command: clap::Command,
    sub: Option<&str>,
) -> Option<std::io::Result<Vec<u8>>> {
    let command = match sub {
        None => command,
        Some(name) => {
            let found = command.find_subcommand(name)?.clone();
            let title = format!("airlock-{name}");
            found
                .bin_name(format!("airlock {name}"))
                .display_name(title)
        }
    };
    let mut out = Vec::new();
    if let Err(error) = clap_mangen::Man::new(command).render(&mut out) {
        return Some(Err(error));
    }
    // Our sections go before VERSION (clap's last one here), or at the end.
    let extra = sections(sub);
    let at = out
        .windows(b"\n.SH VERSION".len())
        .position(|window| window == b"\n.SH VERSION")
        .map_or(out.len(), |found| found.saturating_add(1));
    let tail = out.split_off(at.min(out.len()));
    out.extend_from_slice(extra.as_bytes());
    out.extend_from_slice(&tail);
    Some(Ok(out))
}

/// ENVIRONMENT, FILES, EXIT STATUS and (for serve) SIGNALS for the page of `sub` (or
/// airlock's own), in roff.
fn sections(sub: Option<&str>) -> String {
    let entry = |name: &str, text: &str| format!(".TP\n\\fB{name}\\fR\n{text}\n");
    let mut page = String::from(".SH ENVIRONMENT\n");
    page.push_str(&entry(
        "AIRLOCK_LOG",
        "Which log lines are written (the syntax of RUST_LOG; default info). Logs go to \
         stderr, or to \\-\\-log-file; stdout carries protocol lines only.",
    ));
    if matches!(sub, None | Some("serve" | "call")) {
        page.push_str(&entry(
            "the manifest's variables",
            "Tools receive only what their manifest entry lists: env_allow variables and \
             secret_env secrets are read from airlock's environment when the manifest loads; \
             a missing one stops the load. Nothing else of the environment reaches a tool.",
        ));
        page.push_str(&entry(
            "AIRLOCK_REDIS_URL",
            "The shared quota store's URL, read by serve \\-\\-quota-store redis \
             (another variable with \\-\\-redis-url-env).",
        ));
    }
    if matches!(sub, None | Some("audit")) {
        page.push_str(&entry(
            "the variable named by \\-\\-auth\\-token\\-env",
            "audit \\-\\-url sends its value as a bearer token with every request. It, the \
             \\-\\-header values and the values of the auditor's variables whose names hold \
             TOKEN, SECRET, PASSWORD, PASSWD, KEY, CREDENTIAL, AUTH, COOKIE or PRIVATE are \
             replaced by [redacted] in the evidence reports show.",
        ));
    }
    page.push_str(".SH FILES\n");
    page.push_str(&entry(
        "./airlock.toml",
        "The manifest serve, check and call use when \\-\\-manifest is not given; \
         without it, the embedded default (read-only tools over the working directory).",
    ));
    page.push_str(".SH EXIT STATUS\n");
    let statuses: &[(&str, &str)] = match sub {
        Some("check") => &[
            ("0", "the manifest is valid"),
            ("1", "it is not; every problem is printed"),
        ],
        Some("call") => &[
            ("0", "the tool succeeded"),
            ("1", "the tool returned an error, or the call was refused"),
            ("2", "the arguments cannot be read"),
        ],
        Some("client-config") => &[("0", "the snippet was printed"), ("2", "a usage error")],
        Some("audit") => &[
            ("0", "no new finding at or over \\-\\-fail\\-on"),
            ("1", "a new finding at or over \\-\\-fail\\-on"),
            ("2", "a usage error"),
            (
                "3",
                "the server could not be audited (it never answered, or cannot be reached)",
            ),
        ],
        Some("serve") | None => &[
            (
                "0",
                "end of input, the peer closed stdout, or SIGTERM or SIGINT (SIGHUP reloads \
                 the manifest file, or ends a server of the embedded default)",
            ),
            (
                "1",
                "a manifest or start-up error, or a sandbox the kernel cannot enforce",
            ),
            ("2", "a usage error"),
            (
                "3",
                "the peer was cut off for sending only invalid messages",
            ),
            (
                "4",
                "stdin or stdout failed, or the HTTP address could not be bound",
            ),
        ],
        Some(_) => &[("0", "success"), ("1", "failure"), ("2", "a usage error")],
    };
    for (status, meaning) in statuses {
        page.push_str(&entry(status, meaning));
    }
    if matches!(sub, None | Some("serve")) {
        page.push_str(".SH SIGNALS\n");
        let signals: [(&str, &str); 3] = [
            (
                "SIGTERM, SIGINT",
                "serve stops: calls in flight are cancelled (their process groups killed), \
                 status 0.",
            ),
            (
                "SIGHUP",
                "serve reloads its manifest file: read and checked whole as at start, then \
                 its tools replace the old ones (calls in flight finish on theirs; legacy \
                 clients get notifications/tools/list_changed). A manifest that fails keeps \
                 the old tools and logs why at ERROR. Serving the embedded default, SIGHUP \
                 stops serve as SIGTERM does.",
            ),
            (
                "SIGUSR1",
                "serve reopens the \\-\\-audit\\-log file (log rotation); never stops it.",
            ),
        ];
        for (signal, meaning) in signals {
            page.push_str(&entry(signal, meaning));
        }
    }
    page
}
