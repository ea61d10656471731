//! The rules: each has a stable name (reports, baselines and SARIF key on it), a family (what
//! `airlock check`'s `accept_risk` names), a level and help text for a reviewer.

/// How bad a finding of a rule is (the audit maps these onto its own severities).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Worth a look: a reviewer may not see all of it.
    Low,
    /// The model is steered, or a reviewer is likely misled.
    Medium,
    /// Text hidden from the human, or an instruction to the model against its user.
    High,
}

/// The two kinds of risk a manifest may accept (`accept_risk`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Characters a reviewer does not see: `accept_risk = ["hidden_text"]`.
    HiddenText,
    /// Sentences addressed to the model, references to absent tools, oversized text and
    /// unbounded secret inputs: `accept_risk = ["model_instructions"]`.
    ModelInstructions,
}

impl Family {
    /// The name `accept_risk` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::HiddenText => "hidden_text",
            Self::ModelInstructions => "model_instructions",
        }
    }
}

/// One rule of [`crate::RULESET_VERSION`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// An invisible format character (Unicode category Cf: zero-width spaces and joiners
    /// outside emoji, word joiners, soft hyphens, the byte-order mark, …).
    InvisibleCharacter,
    /// A bidirectional control (U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069):
    /// text that reads in another order than it is stored.
    BidiControl,
    /// A tag character (U+E0000–U+E007F): invisible ASCII a model reads.
    TagCharacter,
    /// A variation selector that does not follow an emoji or a symbol it applies to (and
    /// every supplementary one, U+E0100–U+E01EF): bytes that encode text nobody sees.
    VariationSelector,
    /// An ANSI or other terminal escape (ESC, CSI, OSC): text that rewrites a terminal.
    TerminalEscape,
    /// Another control character (C0 but tab and line breaks, DEL, C1, a carriage return
    /// not ending a line): it moves the cursor or hides what follows.
    ControlCharacter,
    /// A long run of blank characters ([`crate::MIN_BLANK_RUN`]).
    BlankRun,
    /// An instruction to read or pass on files, keys or secrets.
    ReadSecrets,
    /// An instruction to keep something from the user.
    HideFromUser,
    /// An instruction to ignore or override other instructions.
    OverrideInstructions,
    /// Text marked for the model (`<IMPORTANT>`, "note to the assistant", …).
    AddressedToModel,
    /// An instruction to call, or not to call, other tools or servers.
    CallOtherTools,
    /// A reference to a tool the server does not have (shadowing another server's tool).
    Shadowing,
    /// A string input with no bound whose name or description asks for a secret.
    UnboundedSecretInput,
    /// A string input with no bound whose name or description asks for a path.
    UnboundedPathInput,
    /// A description or instructions longer than the bound.
    Oversized,
}

impl Rule {
    /// Every rule, in report order.
    pub const ALL: [Self; 16] = [
        Self::InvisibleCharacter,
        Self::BidiControl,
        Self::TagCharacter,
        Self::VariationSelector,
        Self::TerminalEscape,
        Self::ControlCharacter,
        Self::BlankRun,
        Self::ReadSecrets,
        Self::HideFromUser,
        Self::OverrideInstructions,
        Self::AddressedToModel,
        Self::CallOtherTools,
        Self::Shadowing,
        Self::UnboundedSecretInput,
        Self::UnboundedPathInput,
        Self::Oversized,
    ];

    /// The stable name.
    pub fn name(self) -> &'static str {
        match self {
            Self::InvisibleCharacter => "invisible-character",
            Self::BidiControl => "bidi-control",
            Self::TagCharacter => "tag-character",
            Self::VariationSelector => "variation-selector",
            Self::TerminalEscape => "terminal-escape",
            Self::ControlCharacter => "control-character",
            Self::BlankRun => "blank-run",
            Self::ReadSecrets => "read-secrets",
            Self::HideFromUser => "hide-from-user",
            Self::OverrideInstructions => "override-instructions",
            Self::AddressedToModel => "addressed-to-model",
            Self::CallOtherTools => "call-other-tools",
            Self::Shadowing => "shadowing",
            Self::UnboundedSecretInput => "unbounded-secret-input",
            Self::UnboundedPathInput => "unbounded-path-input",
            Self::Oversized => "oversized",
        }
    }

    /// The rule called `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|rule| rule.name() == name)
    }

    /// Its family.
    pub fn family(self) -> Family {
        match self {
            Self::InvisibleCharacter
            | Self::BidiControl
            | Self::TagCharacter
            | Self::VariationSelector
            | Self::TerminalEscape
            | Self::ControlCharacter
            | Self::BlankRun => Family::HiddenText,
            Self::ReadSecrets
            | Self::HideFromUser
            | Self::OverrideInstructions
            | Self::AddressedToModel
            | Self::CallOtherTools
            | Self::Shadowing
            | Self::UnboundedSecretInput
            | Self::UnboundedPathInput
            | Self::Oversized => Family::ModelInstructions,
        }
    }

    /// How bad a finding is.
    pub fn level(self) -> Level {
        match self {
            Self::InvisibleCharacter
            | Self::BidiControl
            | Self::TagCharacter
            | Self::TerminalEscape
            | Self::ReadSecrets
            | Self::HideFromUser
            | Self::OverrideInstructions => Level::High,
            Self::VariationSelector
            | Self::ControlCharacter
            | Self::AddressedToModel
            | Self::CallOtherTools
            | Self::Shadowing
            | Self::UnboundedSecretInput => Level::Medium,
            Self::BlankRun | Self::UnboundedPathInput | Self::Oversized => Level::Low,
        }
    }

    /// What the rule finds, in one sentence.
    pub fn summary(self) -> &'static str {
        match self {
            Self::InvisibleCharacter => "an invisible format character (Unicode Cf)",
            Self::BidiControl => "a bidirectional control character",
            Self::TagCharacter => "Unicode tag characters (invisible ASCII)",
            Self::VariationSelector => "a variation selector outside an emoji",
            Self::TerminalEscape => "an ANSI or terminal escape sequence",
            Self::ControlCharacter => "a control character",
            Self::BlankRun => "a long run of blank characters",
            Self::ReadSecrets => "an instruction to read or pass on files or secrets",
            Self::HideFromUser => "an instruction to hide something from the user",
            Self::OverrideInstructions => "an instruction to ignore or override instructions",
            Self::AddressedToModel => "text marked for the model rather than the user",
            Self::CallOtherTools => "an instruction about calling other tools or servers",
            Self::Shadowing => "a reference to a tool this server does not have",
            Self::UnboundedSecretInput => "an unbounded string input that asks for a secret",
            Self::UnboundedPathInput => "an unbounded string input that asks for a path",
            Self::Oversized => "text longer than a reviewer reads",
        }
    }

    /// Why it matters and what to do, for SARIF's help text and `airlock check`.
    pub fn help(self) -> &'static str {
        match self {
            Self::InvisibleCharacter => {
                "Zero-width spaces and joiners, word joiners, soft hyphens and other Unicode \
                 format characters are not shown to the human who approves a server, but the \
                 model reads them (and text hidden between them). Remove them; a zero-width \
                 joiner inside an emoji sequence is not reported."
            }
            Self::BidiControl => {
                "Bidirectional controls make text display in another order than the model \
                 reads it (Trojan Source). Remove them from names, descriptions and schemas."
            }
            Self::TagCharacter => {
                "Characters U+E0000-U+E007F mirror ASCII invisibly: a whole sentence for the \
                 model can be written in them and show as nothing. No tool text needs them."
            }
            Self::VariationSelector => {
                "Variation selectors choose how the character before them is drawn; after a \
                 letter, or in a long run, they carry data no reviewer sees. Keep only the one \
                 that follows an emoji or a symbol."
            }
            Self::TerminalEscape => {
                "ANSI escapes recolour, move the cursor, clear lines or set a terminal's title \
                 and clipboard: a reviewer reading in a terminal sees something else than the \
                 model gets. Tool text should hold no escape."
            }
            Self::ControlCharacter => {
                "Control characters (backspace, carriage return without a line feed, bell, \
                 C1) overwrite or hide text in a terminal. Remove them."
            }
            Self::BlankRun => {
                "A long run of spaces or line breaks pushes what follows off the screen of a \
                 reviewer while the model reads it all. Shorten it."
            }
            Self::ReadSecrets => {
                "The text tells the model to read or send files, keys or credentials (a tool \
                 poisoning attack): a model follows tool descriptions. Tool text should say \
                 what the tool does, not what the model must fetch for it."
            }
            Self::HideFromUser => {
                "The text tells the model to keep something from its user: the user's \
                 approval of a call is then uninformed. No honest tool needs this."
            }
            Self::OverrideInstructions => {
                "The text tells the model to ignore or replace its other instructions (prompt \
                 injection). Remove it."
            }
            Self::AddressedToModel => {
                "The text is marked for the model (<IMPORTANT>, 'note to the AI'): it steers \
                 the model past what the user sees in a tool list. Describe the tool instead."
            }
            Self::CallOtherTools => {
                "The text tells the model to call, or avoid, other tools or servers: a tool that \
                 redirects the use of others (shadowing) can reroute data. Describe this tool \
                 only."
            }
            Self::Shadowing => {
                "The text names a tool this server does not list: it addresses another \
                 server's tools, to change how the model uses them. Name only this server's \
                 tools."
            }
            Self::UnboundedSecretInput => {
                "An input asks for a password, token or key and accepts text of any length: \
                 the model is led to hand over secrets, and nothing bounds what it sends. Take \
                 secrets from the server's configuration, not from the model."
            }
            Self::UnboundedPathInput => {
                "An input asks for a path and accepts text of any length with no pattern: \
                 whatever the model is told can be sent. Give it a maxLength and a pattern, \
                 or an enum."
            }
            Self::Oversized => {
                "A description longer than a reviewer reads can hide a sentence for the model \
                 among many for people. Shorten it."
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_names_are_unique_and_parse_back() {
        let mut seen = std::collections::HashSet::new();
        for rule in Rule::ALL {
            assert!(seen.insert(rule.name()), "{}", rule.name());
            assert_eq!(Rule::parse(rule.name()), Some(rule));
            assert!(!rule.help().is_empty() && !rule.summary().is_empty());
        }
        assert_eq!(Rule::parse("nope"), None);
    }
}
