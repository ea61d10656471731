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
    Some(
        clap_mangen::Man::new(command)
            .render(&mut out)
            .map(|()| out),
    )
}
