//! A product's own command-line tool that also serves its commands to agents over MCP.
//!
//! Each command is one function. The clap path and the MCP tool handler both call it with the
//! same argument type: clap reads it from the command line, airlock from `tools/call` after
//! checking it against the schema schemars derives from the same struct (doc comments become
//! the `--help` text, the tool's description and the schema's descriptions). The functions
//! check their own bounds too, so the command line gets the same refusals as an agent. The
//! schema derive goes through `airlock::schemars`, so the schemars this program sees is the
//! one airlock reads.
//!
//! ```text
//! product_cli stats "the quick brown fox jumps over the lazy dog"
//! product_cli convert 100 --from celsius --to fahrenheit --precision 1
//! product_cli case "Hello wide World" --style kebab
//! product_cli mcp            # serve the three commands on stdin/stdout
//! ```

use std::collections::BTreeMap;
use std::io::{self, Write as _};
use std::process::ExitCode;

use airlock::schemars::{self, JsonSchema};
use airlock::{BuildError, Server, Structured, Tool, ToolAnnotations, ToolError};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};

/// A product CLI whose commands are also MCP tools.
#[derive(Debug, Parser)]
#[command(name = "product-cli", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Stats(StatsArgs),
    Convert(ConvertArgs),
    Case(CaseArgs),
    /// Serves these commands as MCP tools on stdin/stdout.
    Mcp,
}

/// Counts the lines, words, characters and bytes of a text and finds its most frequent word.
#[derive(Debug, Args, Deserialize, JsonSchema)]
struct StatsArgs {
    /// The text to measure, at most 10000 characters.
    #[schemars(length(max = MAX_TEXT_CHARS))]
    text: String,
}

/// Converts a temperature between celsius, fahrenheit and kelvin. Refuses values below
/// absolute zero.
#[derive(Debug, Args, Deserialize, JsonSchema)]
struct ConvertArgs {
    /// The temperature, in the `from` unit; at most one million in magnitude.
    #[arg(allow_negative_numbers = true)]
    #[schemars(range(min = -MAX_TEMPERATURE, max = MAX_TEMPERATURE))]
    value: f64,
    /// The unit of `value`.
    #[arg(long, value_enum)]
    from: Unit,
    /// The unit to convert to.
    #[arg(long, value_enum)]
    to: Unit,
    /// Decimal places in the result, 0 to 6 (default 2).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=i64::from(MAX_PRECISION)))]
    #[schemars(range(max = MAX_PRECISION))]
    precision: Option<u8>,
}

/// Rewrites a text in upper, lower, title, snake or kebab case.
#[derive(Debug, Args, Deserialize, JsonSchema)]
struct CaseArgs {
    /// The text to rewrite, at most 10000 characters.
    #[schemars(length(max = MAX_TEXT_CHARS))]
    text: String,
    /// The case style: upper, lower, title, snake or kebab.
    #[arg(long, value_enum)]
    style: Style,
}

/// A temperature unit.
#[derive(Clone, Copy, Debug, Deserialize, Eq, JsonSchema, PartialEq, ValueEnum)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
    Kelvin,
}

/// A case style.
#[derive(Clone, Copy, Debug, Deserialize, Eq, JsonSchema, PartialEq, ValueEnum)]
#[serde(rename_all = "lowercase")]
enum Style {
    Upper,
    Lower,
    Title,
    Snake,
    Kebab,
}

/// What `stats` finds in a text.
#[derive(Debug, Eq, JsonSchema, PartialEq, Serialize)]
struct TextStats {
    /// Lines, as `str::lines` counts them (a final newline adds none).
    lines: usize,
    /// Whitespace-separated words.
    words: usize,
    /// Unicode scalar values.
    characters: usize,
    /// UTF-8 bytes.
    bytes: usize,
    /// Distinct words, compared case-insensitively without surrounding punctuation.
    unique_words: usize,
    /// The most frequent word (the alphabetically first on a tie); null if there are no words.
    most_frequent_word: Option<String>,
    /// How often the most frequent word occurs.
    most_frequent_count: usize,
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Stats(args) => match stats(&args.text) {
            Ok(found) => match serde_json::to_string_pretty(&found) {
                Ok(json) => emit(&json),
                Err(error) => fail(&format!("cannot encode the statistics: {error}")),
            },
            Err(error) => fail_tool(error),
        },
        Command::Convert(args) => match convert(args.value, args.from, args.to, args.precision) {
            Ok(value) => emit(&value.to_string()),
            Err(error) => fail_tool(error),
        },
        Command::Case(args) => match change_case(&args.text, args.style) {
            Ok(text) => emit(&text),
            Err(error) => fail_tool(error),
        },
        Command::Mcp => match server() {
            Ok(server) => server.run_stdio(),
            Err(error) => fail(&format!("invalid tools: {error}")),
        },
    }
}

/// The MCP server: the same three commands, as tools.
fn server() -> Result<Server, BuildError> {
    Server::builder("product-cli", env!("CARGO_PKG_VERSION"))
        .title("Product CLI")
        .instructions(
            "Text and unit utilities. Use `stats` to measure a text, `convert` for \
             temperatures and `case` to restyle identifiers or titles.",
        )
        // Each description is the doc comment of the tool's argument type.
        .tool(
            Tool::builder("stats")
                .title("Text statistics")
                .annotations(ToolAnnotations::read_only())
                .handler(|args: StatsArgs| async move { stats(&args.text).map(Structured) }),
        )
        .tool(
            Tool::builder("convert")
                .title("Temperature conversion")
                .annotations(ToolAnnotations::read_only())
                .handler(|args: ConvertArgs| async move {
                    convert(args.value, args.from, args.to, args.precision)
                        .map(|value| value.to_string())
                }),
        )
        .tool(
            Tool::builder("case")
                .title("Change case")
                .annotations(ToolAnnotations::read_only())
                .handler(|args: CaseArgs| async move { change_case(&args.text, args.style) }),
        )
        .build()
}

/// The `stats` command: counts of `text` and its most frequent word.
fn stats(text: &str) -> Result<TextStats, ToolError> {
    let characters = bounded_chars(text)?;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for word in text.split_whitespace() {
        let word = word
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if !word.is_empty() {
            let count = counts.entry(word).or_default();
            *count = count.saturating_add(1);
        }
    }
    // Highest count wins; on a tie the alphabetically first word compares as greater.
    let top = counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)));
    Ok(TextStats {
        lines: text.lines().count(),
        words: text.split_whitespace().count(),
        characters,
        bytes: text.len(),
        unique_words: counts.len(),
        most_frequent_word: top.map(|(word, _)| word.clone()),
        most_frequent_count: top.map_or(0, |(_, count)| *count),
    })
}

/// The `convert` command: `value` in `from` units, in `to` units, rounded to `precision`.
fn convert(value: f64, from: Unit, to: Unit, precision: Option<u8>) -> Result<f64, ToolError> {
    if !value.is_finite() || value.abs() > MAX_TEMPERATURE {
        return Err(ToolError::new(format!(
            "The value must be a number between -{MAX_TEMPERATURE} and {MAX_TEMPERATURE}."
        )));
    }
    let precision = precision.unwrap_or(DEFAULT_PRECISION);
    if precision > MAX_PRECISION {
        return Err(ToolError::new(format!(
            "The precision must be between 0 and {MAX_PRECISION}."
        )));
    }
    // Through kelvin: the offsets cancel exactly at absolute zero in every unit.
    let kelvin = match from {
        Unit::Celsius => value + 273.15,
        Unit::Fahrenheit => (value + 459.67) * 5.0 / 9.0,
        Unit::Kelvin => value,
    };
    if kelvin < 0.0 {
        return Err(ToolError::new(
            "The temperature is below absolute zero (0 K, -273.15 °C, -459.67 °F).",
        ));
    }
    let converted = match to {
        Unit::Celsius => kelvin - 273.15,
        Unit::Fahrenheit => kelvin * 9.0 / 5.0 - 459.67,
        Unit::Kelvin => kelvin,
    };
    let scale = 10f64.powi(i32::from(precision));
    // Adding 0.0 turns a rounded -0.0 into 0.0, which prints without a sign.
    Ok((converted * scale).round() / scale + 0.0)
}

/// The `case` command: `text` rewritten in `style`.
fn change_case(text: &str, style: Style) -> Result<String, ToolError> {
    bounded_chars(text)?;
    Ok(match style {
        Style::Upper => text.to_uppercase(),
        Style::Lower => text.to_lowercase(),
        Style::Title => title_case(text),
        Style::Snake => words(text).join("_"),
        Style::Kebab => words(text).join("-"),
    })
}

/// Capitalises the first letter of every alphanumeric run; spacing and punctuation stay.
fn title_case(text: &str) -> String {
    let mut titled = String::with_capacity(text.len());
    let mut at_word_start = true;
    for c in text.chars() {
        if at_word_start {
            titled.extend(c.to_uppercase());
        } else {
            titled.extend(c.to_lowercase());
        }
        at_word_start = !c.is_alphanumeric();
    }
    titled
}

/// The lowercase words of a text, split at non-alphanumerics and camelCase boundaries
/// (`parseHTTPRequest` gives `parse`, `http`, `request`).
fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if !c.is_alphanumeric() {
            words.extend((!current.is_empty()).then(|| std::mem::take(&mut current)));
            previous = None;
            continue;
        }
        let next = chars.peek().copied();
        let boundary = c.is_uppercase()
            && previous.is_some_and(|p| {
                p.is_lowercase()
                    || p.is_numeric()
                    || (p.is_uppercase() && next.is_some_and(char::is_lowercase))
            });
        if boundary {
            words.extend((!current.is_empty()).then(|| std::mem::take(&mut current)));
        }
        current.extend(c.to_lowercase());
        previous = Some(c);
    }
    words.extend((!current.is_empty()).then_some(current));
    words
}

/// The number of characters in `text`, or a refusal past [`MAX_TEXT_CHARS`]. The schema holds
/// agents to the same bound; this holds the command line to it.
fn bounded_chars(text: &str) -> Result<usize, ToolError> {
    let characters = text.chars().count();
    if characters > MAX_TEXT_CHARS {
        return Err(ToolError::new(format!(
            "The text has {characters} characters; at most {MAX_TEXT_CHARS} are accepted."
        )));
    }
    Ok(characters)
}

/// Prints `text` and a newline on stdout.
fn emit(text: &str) -> ExitCode {
    match writeln!(io::stdout().lock(), "{text}") {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(&format!("cannot write to stdout: {error}")),
    }
}

/// Reports a command's refusal on stderr.
fn fail_tool(error: ToolError) -> ExitCode {
    fail(error.message())
}

/// Reports `message` on stderr and returns a failure status.
fn fail(message: &str) -> ExitCode {
    match writeln!(io::stderr().lock(), "product-cli: {message}") {
        Ok(()) => ExitCode::FAILURE,
        // stderr is gone too: nobody is left to tell, and the status still says it failed.
        Err(_) => ExitCode::FAILURE,
    }
}

/// Longest text `stats` and `case` accept, in characters: enough for a page, small enough
/// that counting and restyling stay instant.
const MAX_TEXT_CHARS: usize = 10_000;

/// Largest temperature magnitude `convert` accepts, in any unit.
const MAX_TEMPERATURE: f64 = 1_000_000.0;

/// Decimal places when the caller gives none.
const DEFAULT_PRECISION: u8 = 2;

/// Most decimal places `convert` rounds to.
const MAX_PRECISION: u8 = 6;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_count_lines_words_characters_and_the_top_word() {
        let found = stats("The cat saw the dog.\nThe end — café").unwrap();
        assert_eq!(
            found,
            TextStats {
                lines: 2,
                words: 9,
                characters: 35,
                bytes: 38,
                unique_words: 6,
                most_frequent_word: Some("the".into()),
                most_frequent_count: 3,
            }
        );
    }

    #[test]
    fn stats_of_a_blank_text_have_no_top_word_and_ties_go_to_the_first_word() {
        let blank = stats(" \n ").unwrap();
        assert_eq!((blank.words, blank.most_frequent_word), (0, None));
        let tie = stats("b a b a").unwrap();
        assert_eq!(tie.most_frequent_word.as_deref(), Some("a"));
        assert_eq!(tie.most_frequent_count, 2);
    }

    #[test]
    fn over_long_texts_are_refused() {
        let long = "x".repeat(MAX_TEXT_CHARS + 1);
        assert!(stats(&long).is_err());
        assert!(change_case(&long, Style::Upper).is_err());
        assert!(stats(&"é".repeat(MAX_TEXT_CHARS)).is_ok());
    }

    #[test]
    fn temperatures_convert_between_every_pair_of_units() {
        let c = |v, from, to| convert(v, from, to, None).unwrap();
        assert_eq!(c(100.0, Unit::Celsius, Unit::Fahrenheit), 212.0);
        assert_eq!(c(32.0, Unit::Fahrenheit, Unit::Celsius), 0.0);
        assert_eq!(c(0.0, Unit::Celsius, Unit::Kelvin), 273.15);
        assert_eq!(c(0.0, Unit::Kelvin, Unit::Celsius), -273.15);
        assert_eq!(c(0.0, Unit::Kelvin, Unit::Fahrenheit), -459.67);
        assert_eq!(c(-459.67, Unit::Fahrenheit, Unit::Kelvin), 0.0);
        assert_eq!(c(-40.0, Unit::Celsius, Unit::Fahrenheit), -40.0);
        assert_eq!(c(300.0, Unit::Kelvin, Unit::Kelvin), 300.0);
    }

    #[test]
    fn precision_rounds_and_negative_zero_prints_as_zero() {
        let third = |p| convert(100.0, Unit::Fahrenheit, Unit::Celsius, p).unwrap();
        assert_eq!(third(Some(0)), 38.0);
        assert_eq!(third(None), 37.78);
        assert_eq!(third(Some(6)), 37.777778);
        let zero = convert(-273.15, Unit::Celsius, Unit::Kelvin, Some(3)).unwrap();
        assert_eq!(zero.to_string(), "0");
        let tiny = convert(-0.001, Unit::Celsius, Unit::Celsius, Some(0)).unwrap();
        assert_eq!(tiny.to_string(), "0");
    }

    #[test]
    fn temperatures_below_absolute_zero_and_bad_inputs_are_refused() {
        for (value, unit) in [
            (-0.01, Unit::Kelvin),
            (-273.16, Unit::Celsius),
            (-459.68, Unit::Fahrenheit),
        ] {
            let refusal = convert(value, unit, Unit::Kelvin, None).unwrap_err();
            assert!(refusal.message().contains("absolute zero"), "{value}");
        }
        assert!(convert(f64::NAN, Unit::Kelvin, Unit::Celsius, None).is_err());
        assert!(convert(2e6, Unit::Kelvin, Unit::Celsius, None).is_err());
        assert!(convert(1.0, Unit::Kelvin, Unit::Celsius, Some(7)).is_err());
    }

    #[test]
    fn every_case_style_rewrites_the_text() {
        let case = |text, style| change_case(text, style).unwrap();
        assert_eq!(case("Hello, wide World", Style::Upper), "HELLO, WIDE WORLD");
        assert_eq!(case("Hello, wide World", Style::Lower), "hello, wide world");
        assert_eq!(
            case("hello wORLD-foo 2nd", Style::Title),
            "Hello World-Foo 2nd"
        );
        assert_eq!(
            case("parseHTTPRequest v2Api", Style::Snake),
            "parse_http_request_v2_api"
        );
        assert_eq!(
            case("  Hello, wide World! ", Style::Kebab),
            "hello-wide-world"
        );
        assert_eq!(case("", Style::Snake), "");
    }

    #[test]
    fn the_server_builds_with_all_three_tools() {
        assert!(server().is_ok());
    }
}
