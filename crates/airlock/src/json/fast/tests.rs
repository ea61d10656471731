//! The fast reader's tests: the frames clients send, what it leaves to the full reader, and
//! the property that whenever it answers, the full reader agrees.

use proptest::prelude::*;

use super::*;
use crate::envelope::Mcp;
use crate::json::{TopLevel, parse_full};

/// What the full reader makes of `frame`, as text, when it reads an object.
fn full(frame: &str, depth: usize) -> Option<String> {
    match parse_full::<Mcp>(frame, depth) {
        Ok(TopLevel::Object(members)) => Some(format!("{members:?}")),
        _ => None,
    }
}

fn fast(frame: &str, depth: usize) -> Option<String> {
    parse::<Mcp>(frame, depth).map(|members| format!("{members:?}"))
}

#[test]
fn the_frames_clients_send_are_read_here_as_the_full_reader_reads_them() {
    for frame in [
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":"a-1","method":"tools/list","params":{}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello","n":-3,"list":[1,true,null,{"k":"v"}],"e":{}}}}"#,
        r#" { "jsonrpc" : "2.0" , "id" : 123456789012345678 , "method" : "tools/call" , "params" : { "name" : "é—ü" , "arguments" : { } , "_meta" : { "progressToken" : 3 } } } "#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}"#,
        "{}",
    ] {
        let got = fast(frame, 64);
        assert!(got.is_some(), "not read here: {frame}");
        assert_eq!(got, full(frame, 64), "{frame}");
    }
}

#[test]
fn anything_unusual_is_left_to_the_full_reader() {
    for frame in [
        r#"{"jsonrpc":"2.0","id":1,"method":"p\u0069ng"}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":-0,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1e3,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1234567890123456789,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":01,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","x":1}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":{"a":1,"a":2}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"name":"a","name":"b"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"reason":"r"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"name":1}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[]}"#,
        r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
        r#"{"jsonrpc":2,"id":1,"method":"ping"}"#,
        "{\"jsonrpc\":\"2.0\",\"id\":\"a\tb\",\"method\":\"ping\"}",
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"} x"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping",}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":{"a":[1,]}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":{"a":tru}}}"#,
        "\u{feff}{}",
        "[]",
        "1",
    ] {
        assert_eq!(fast(frame, 64), None, "read here: {frame}");
    }
}

#[test]
fn nesting_past_the_limit_or_this_readers_own_depth_is_left_to_the_full_reader() {
    let nested = |depth: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"arguments":{}1{}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        )
    };
    // The arrays start at depth 3.
    assert!(fast(&nested(5), 7).is_some());
    assert_eq!(fast(&nested(5), 7), full(&nested(5), 7));
    assert_eq!(fast(&nested(6), 7), None);
    assert_eq!(fast(&nested(40), 64), None);
    assert_eq!(fast(r#"{"params":{}}"#, 1), None);
}

/// Scalars, mostly plain, some of each kind this reader gives up on.
fn piece() -> impl Strategy<Value = String> {
    let plain = prop_oneof![
        Just("\"2.0\""),
        Just("\"tools/call\""),
        Just("\"é—ü\""),
        Just("\"\""),
        Just("0"),
        Just("-12"),
        Just("123456789012345678"),
        Just("-123456789012345678"),
        Just("true"),
        Just("false"),
        Just("null"),
        Just("{}"),
        Just("[ ]"),
    ];
    let unusual = prop_oneof![
        Just("\"a\\u0062\""),
        Just("\"\\n\""),
        Just("\"\u{1}\""),
        Just("-0"),
        Just("007"),
        Just("1.5"),
        Just("1e400"),
        Just("1234567890123456789"),
        Just("18446744073709551616"),
        Just("nul"),
        Just("tru e"),
    ];
    prop_oneof![12 => plain, 1 => unusual].prop_map(str::to_owned)
}

fn value() -> impl Strategy<Value = String> {
    piece().prop_recursive(6, 48, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4)
                .prop_map(|items| format!("[{}]", items.join(" , "))),
            prop::collection::vec(
                (
                    prop_oneof![8 => Just("k"), 8 => Just("l"), 1 => Just("\\u006b")],
                    inner
                ),
                0..3
            )
            .prop_map(|members| {
                let members: Vec<String> = members
                    .iter()
                    .map(|(key, value)| format!("\"{key}\":{value}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

/// A member that should be a string (or, for the id, a number): mostly one.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just("\"2.0\"".to_owned()),
        3 => Just("\"tools/call\"".to_owned()),
        2 => Just("7".to_owned()),
        1 => Just("\"a\\\"b\"".to_owned()),
        2 => value(),
    ]
}

/// A frame's members: each of JSON-RPC's at most once (as a client sends them), now and
/// then an unusual one, in any order.
fn members() -> impl Strategy<Value = Vec<String>> {
    let params_key = prop_oneof![
        4 => Just("name"),
        4 => Just("arguments"),
        4 => Just("_meta"),
        2 => Just("cursor"),
        1 => Just("task"),
        1 => Just("reason"),
        1 => Just("\\u006eame"),
    ];
    let params_value = prop_oneof![text(), value()];
    let params = prop::collection::vec((params_key, params_value), 0..4).prop_map(|members| {
        let members: Vec<String> = members
            .iter()
            .map(|(key, value)| format!("\"{key}\" : {value}"))
            .collect();
        format!("\"params\":{{{}}}", members.join(","))
    });
    let extra = prop_oneof![
        Just("\"result\":{}".to_owned()),
        Just("\"other\":1".to_owned()),
        Just("\"id\":2".to_owned()),
        value().prop_map(|value| format!("\"params\":{value}")),
    ];
    (
        prop::option::weighted(0.9, text().prop_map(|v| format!("\"jsonrpc\":{v}"))),
        prop::option::weighted(0.9, text().prop_map(|v| format!("\"id\":{v}"))),
        prop::option::weighted(0.9, text().prop_map(|v| format!("\"method\":{v}"))),
        prop::option::weighted(0.8, params),
        prop::option::weighted(0.1, extra),
    )
        .prop_map(|(a, b, c, d, e)| [a, b, c, d, e].into_iter().flatten().collect())
        .prop_shuffle()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// Eight bytes at a time finds the byte a byte-by-byte search finds.
    #[test]
    fn the_plain_length_is_the_place_of_the_first_byte_that_ends_a_plain_string(
        bytes in prop::collection::vec(
            prop_oneof![4 => 0x20u8..0x7f, 1 => Just(b'"'), 1 => Just(b'\\'), 1 => 0u8..0x20, 1 => 0x7fu8..=0xff],
            0..40,
        ),
    ) {
        let naive = bytes.iter().position(|&byte| ends_plain(byte)).unwrap_or(bytes.len());
        prop_assert_eq!(plain_length(&bytes), naive);
    }

    /// Whenever this reader answers, the full reader reads the same members.
    #[test]
    fn whenever_this_reader_answers_the_full_reader_agrees(
        members in members(),
        depth in 3usize..8,
        tail in prop_oneof![Just(""), Just(" "), Just("\r"), Just(","), Just("}")],
    ) {
        let frame = format!("{{{}}}{tail}", members.join(","));
        if let Some(got) = fast(&frame, depth) {
            prop_assert_eq!(Some(got), full(&frame, depth), "{}", frame);
        }
    }
}

// The red team's battery against the fast reader (found nothing; kept so that any change to
// the fast reader meets it): crafted frames at every depth around the limits, mutations of
// real frames, plain-looking frames with near-whitespace and near-numbers, nesting around
// the depths where the readers' limits bite, and the eight-at-a-time scan at every byte and
// place. Each asserts the contract: whenever the fast reader answers, the full reader reads
// the same members.
mod battery {
    use proptest::prelude::*;

    use super::*;
    use crate::envelope::Mcp;
    use crate::json::{TopLevel, parse_full};

    const DEPTHS: [usize; 17] = [
        0,
        1,
        2,
        3,
        4,
        5,
        6,
        8,
        16,
        31,
        32,
        33,
        64,
        128,
        129,
        200,
        usize::MAX,
    ];

    /// The contract: when fast answers, full reads an object with the same members.
    fn check(frame: &str, depth: usize) -> Result<(), String> {
        let Some(fast) = parse::<Mcp>(frame, depth) else {
            return Ok(());
        };
        let fast = format!("{fast:?}");
        match parse_full::<Mcp>(frame, depth) {
            Ok(TopLevel::Object(full)) => {
                let full = format!("{full:?}");
                if fast == full {
                    Ok(())
                } else {
                    Err(format!(
                        "depth {depth} frame {frame:?}\n fast {fast}\n full {full}"
                    ))
                }
            }
            other => Err(format!(
                "depth {depth} frame {frame:?}\n fast {fast}\n full {other:?}"
            )),
        }
    }

    fn nest(open: &str, close: &str, n: usize, inner: &str) -> String {
        format!("{}{inner}{}", open.repeat(n), close.repeat(n))
    }

    fn battery() -> Vec<String> {
        let mut frames: Vec<String> = Vec::new();
        let wrap_args = |a: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x","arguments":{a}}}}}"#
            )
        };
        let wrap_id = |i: &str| format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"ping"}}"#);
        for id in [
            "0",
            "-1",
            "1",
            "-0",
            "00",
            "-00",
            "01",
            "1.0",
            "1e0",
            "1E0",
            "1e+0",
            "-",
            "--1",
            "+1",
            "999999999999999999",
            "-999999999999999999",
            "1000000000000000000",
            "-1000000000000000000",
            "9223372036854775807",
            "-9223372036854775808",
            "18446744073709551615",
            "18446744073709551616",
            "1e400",
            "\"\"",
            "\"a\"",
            "\"a\\\"\"",
            "\"\\u0061\"",
            "\"\\ud800\"",
            "\"\u{7f}\"",
            "\"\u{1f}\"",
            "\"\t\"",
            "\"é\"",
            "null",
            "true",
            "[]",
            "{}",
            "[1]",
            "\"a\" ",
            " 1 ",
            "1 ",
            "\"a\"\"b\"",
            "1\"a\"",
            "0x1",
            "1.",
            ".1",
            "1e",
            "Infinity",
            "NaN",
            "-Infinity",
            "\"\u{2028}\"",
        ] {
            frames.push(wrap_id(id));
        }
        for a in [
            "{}",
            "[]",
            "[ ]",
            "{ }",
            "[1,2]",
            "[1,,2]",
            "[,]",
            "[1 2]",
            "{\"a\":1 \"b\":2}",
            "{\"a\":1,\"a\":1}",
            "{\"a\":1,\"\\u0061\":1}",
            "{\"a\":{\"b\":1,\"b\":2}}",
            "[-0]",
            "[0]",
            "[-0.0]",
            "[1e2]",
            "[123456789012345678]",
            "[1234567890123456789]",
            "[-123456789012345678]",
            "[true,false,null]",
            "[tru]",
            "[nulll]",
            "[truefalse]",
            "[1true]",
            "[\"a\"\"b\"]",
            "{\"\":1}",
            "{\"\":1,\"\":2}",
            "{1:2}",
            "{\"a\"}",
            "{\"a\":}",
            "[\"\u{0}\"]",
            "[\"\u{7f}\"]",
            "\"s\"",
            "1",
            "-5",
            "null",
            "[\"\\/\"]",
            "[\u{a0}1]",
            "[\u{b}1]",
            "[\u{c}1]",
            "[\u{feff}1]",
            "[1\u{0}]",
            "{\"a\":1}x",
            "{\"a\":[1]]",
            "{\"a\":[1}",
        ] {
            frames.push(wrap_args(a));
        }
        // Keys of the envelope under other spellings and repeated.
        for f in [
            r#"{"id":1,"id":2}"#,
            r#"{"id":1,"\u0069d":2,"method":"ping"}"#,
            r#"{"\u0069d":2,"id":1,"method":"ping"}"#,
            r#"{"method":"a","method":"b"}"#,
            r#"{"method":"a","metho\u0064":"b"}"#,
            r#"{"jsonrpc":"2.0","jsonrpc":"1.0","method":"x"}"#,
            r#"{"params":{},"params":{}}"#,
            r#"{"params":{"name":"a","nam\u0065":"b"},"method":"tools/call","id":1}"#,
            r#"{"params":{"nam\u0065":"b","name":"a"},"method":"tools/call","id":1}"#,
            r#"{"params":{"name":"a","name":"a"},"method":"tools/call","id":1}"#,
            r#"{"params":{"arguments":{},"arguments":{}},"method":"tools/call","id":1}"#,
            r#"{"params":{"_meta":{},"_meta":{}},"method":"tools/call","id":1}"#,
            r#"{"params":{"_meta":{"progressToken":1,"progressToken":2}},"method":"tools/call","id":1}"#,
            r#"{"params":{"requestId":-0},"method":"notifications/cancelled"}"#,
            r#"{"params":{"requestId":1},"method":"notifications/cancelled"}"#,
            r#"{"params":{"requestId":"1"},"method":"notifications/cancelled"}"#,
            r#"{"params":{"requestId":1,"requestId":2},"method":"notifications/cancelled"}"#,
            r#"{"params":{"clientInfo":{}},"method":"initialize","id":1}"#,
            r#"{"params":{"task":{}},"method":"tools/call","id":1}"#,
            r#"{"params":{"context":{}},"method":"x","id":1}"#,
            r#"{"params":{"protocolVersion":"2025-06-18","capabilities":{"a":{}}},"method":"initialize","id":1}"#,
            r#"{"params":{"uri":"x","cursor":"y","level":"z","ref":{},"argument":{}},"method":"x","id":1}"#,
            r#"{"params":{"inputResponses":[],"requestState":"s"},"method":"x","id":1}"#,
            r#"{"params":{"name":1},"method":"x","id":1}"#,
            r#"{"params":{"name":null},"method":"x","id":1}"#,
            r#"{"params":null,"method":"x","id":1}"#,
            r#"{"params":[],"method":"x","id":1}"#,
            r#"{"params":"s","method":"x","id":1}"#,
            r#"{"method":1,"id":1}"#,
            r#"{"method":null,"id":1}"#,
            r#"{"jsonrpc":null,"id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","result":1}"#,
            r#"{}"#,
            r#" {} "#,
            "{}\n",
            "{}\r\n",
            "{}\t",
            "{}\u{b}",
            "{}\u{c}",
            "\u{c}{}",
            "{}\u{0}",
            "\u{feff}{}",
            "{}\u{feff}",
            "\u{a0}{}",
            "{}\u{a0}",
            "{\u{a0}}",
            "{\u{b}}",
            "{\"id\"\u{c}:1}",
            "{}{}",
            "{},",
            "{} x",
            "{",
            "}",
            "",
            " ",
            "{\"id\":1,}",
            "{,}",
            "{\"id\"1}",
            "{\"id\"::1}",
            "{\"id\":1,,\"method\":\"x\"}",
            "{'id':1}",
            "{\"id\":1 \"method\":\"x\"}",
            "{\"method\":\"a\u{0}\"}",
            "{\"method\":\"a\u{1f}\"}",
            "{\"method\":\"a\u{7f}\"}",
            "{\"method\":\"\u{2028}\u{2029}\"}",
            "{\"method\":\"a\\\"}",
            "{\"method\":\"a\"}\"",
            "{\"method\":\"abc",
            "{\"method\":\"abcdefg\\\"\"}",
            "{\"method\":\"abcdefgh\"}",
            "{\"method\":\"abcdefghi\"}",
            "{\"method\":\"abcdefg\u{0}\"}",
            "{\"method\":\"abcdefgh\u{1}\"}",
        ] {
            frames.push(f.to_owned());
        }
        // Nesting around the limits (arrays and objects start at depth 3).
        for n in [
            1usize, 2, 29, 30, 31, 32, 33, 62, 63, 64, 125, 126, 127, 128, 129, 200,
        ] {
            frames.push(wrap_args(&nest("[", "]", n, "1")));
            frames.push(wrap_args(&nest("[", "]", n, "")));
            frames.push(wrap_args(&nest("{\"a\":", "}", n, "1")));
            frames.push(format!(
                r#"{{"id":1,"method":"x","params":{{"_meta":{}}}}}"#,
                nest("[", "]", n, "{}")
            ));
        }
        frames
    }

    #[test]
    fn battery_is_not_vacuous() {
        let frames = battery();
        let read = frames
            .iter()
            .filter(|f| parse::<Mcp>(f, 64).is_some())
            .count();
        assert!(read > 40);
    }

    #[test]
    fn mutations_are_not_vacuous() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let strategy = (seed(), prop::collection::vec(edit(), 1..5));
        let (mut some, mut changed_some) = (0, 0);
        let plain = (prop::collection::vec(ws(), 24), str_body(), int());
        let mut plain_some = 0;
        for _ in 0..2000 {
            let (w, body, id) = plain.new_tree(&mut runner).unwrap().current();
            let frame = format!("{}{{\"id\":{id},\"method\":\"{body}\"}}{}", w[0], w[1]);
            if parse::<Mcp>(&frame, 64).is_some() {
                plain_some += 1;
            }
        }
        for _ in 0..5000 {
            let (seed, edits) = strategy.new_tree(&mut runner).unwrap().current();
            let frame = apply(seed.clone(), &edits);
            if parse::<Mcp>(&frame, 64).is_some() {
                some += 1;
                if frame != seed {
                    changed_some += 1;
                }
            }
        }
        // The properties below compare something: the fast reader reads a share of these.
        assert!(plain_some > 10, "plain-looking frames read: {plain_some}");
        assert!(
            some > 50 && changed_some > 20,
            "mutations read: {some}, {changed_some}"
        );
    }

    #[test]
    fn battery_agrees_at_every_depth() {
        let mut failures = Vec::new();
        for frame in battery() {
            for depth in DEPTHS {
                if let Err(e) = check(&frame, depth) {
                    failures.push(e);
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    fn seed() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Just(r#"{"jsonrpc":"2.0","id":"abc-123","method":"tools/list","params":{"cursor":"c"}}"#),
            Just(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello","n":-3,"list":[1,true,null,{"k":"v"}],"e":{}},"_meta":{"progressToken":3}}}"#),
            Just(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12}}"#),
            Just(r#"{"jsonrpc":"2.0","id":-42,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"x":[[[]]]}}}"#),
        ]
        .prop_map(str::to_owned)
    }

    fn alphabet() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("\""),
            Just("\\"),
            Just(","),
            Just(":"),
            Just("{"),
            Just("}"),
            Just("["),
            Just("]"),
            Just(" "),
            Just("\t"),
            Just("\n"),
            Just("\r"),
            Just("\u{b}"),
            Just("\u{c}"),
            Just("\u{0}"),
            Just("\u{1f}"),
            Just("\u{7f}"),
            Just("\u{a0}"),
            Just("\u{feff}"),
            Just("\u{2028}"),
            Just("é"),
            Just("-"),
            Just("0"),
            Just("9"),
            Just("."),
            Just("e"),
            Just("E"),
            Just("+"),
            Just("t"),
            Just("n"),
            Just("u"),
            Just("\\u0069"),
            Just("\\ud800"),
            Just("\\\""),
            Just("\"id\":1"),
            Just("\"id\":"),
            Just("\"params\":{}"),
            Just("\"name\":\"a\""),
            Just("\"arguments\":{}"),
            Just("null"),
            Just("true"),
            Just("1e400"),
            Just("-0"),
            Just("99999999999999999999"),
            Just("\"a\":1"),
            Just("\"result\":1"),
        ]
        .prop_map(str::to_owned)
    }

    #[derive(Debug, Clone)]
    enum Edit {
        Insert(usize, String),
        Replace(usize, usize, String),
        Delete(usize, usize),
        Dup(usize, usize, usize),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            (any::<usize>(), alphabet()).prop_map(|(a, s)| Edit::Insert(a, s)),
            (any::<usize>(), 1usize..4, alphabet()).prop_map(|(a, n, s)| Edit::Replace(a, n, s)),
            (any::<usize>(), 1usize..6).prop_map(|(a, n)| Edit::Delete(a, n)),
            (any::<usize>(), 1usize..20, any::<usize>()).prop_map(|(a, n, b)| Edit::Dup(a, n, b)),
        ]
    }

    fn boundary(s: &str, at: usize) -> usize {
        let mut at = at % (s.len() + 1);
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    fn apply(mut s: String, edits: &[Edit]) -> String {
        for e in edits {
            match e {
                Edit::Insert(a, t) => {
                    let a = boundary(&s, *a);
                    s.insert_str(a, t);
                }
                Edit::Replace(a, n, t) => {
                    let a = boundary(&s, *a);
                    let b = boundary(&s, a + n);
                    s.replace_range(a..b.max(a), t);
                }
                Edit::Delete(a, n) => {
                    let a = boundary(&s, *a);
                    let b = boundary(&s, a + n);
                    s.replace_range(a..b.max(a), "");
                }
                Edit::Dup(a, n, b) => {
                    let a = boundary(&s, *a);
                    let e = boundary(&s, a + n).max(a);
                    let piece = s.get(a..e).unwrap_or_default().to_owned();
                    let b = boundary(&s, *b);
                    s.insert_str(b, &piece);
                }
            }
        }
        s
    }

    fn ws() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![8 => Just(""), 2 => Just(" "), 1 => Just("\t"), 1 => Just("\n"), 1 => Just("\r"),
                1 => Just("\u{b}"), 1 => Just("\u{c}"), 1 => Just("\u{a0}"), 1 => Just("\u{feff}")],
            0..2,
        )
        .prop_map(|v| v.concat())
    }

    fn str_body() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![20 => Just('a'), 2 => Just('\u{7f}'), 2 => Just('é'), 1 => Just('\u{1f}'),
                1 => Just('\u{0}'), 1 => Just('\\'), 1 => Just('"'), 1 => Just('\u{10348}')],
            0..20,
        )
        .prop_map(|v| v.into_iter().collect())
    }

    fn int() -> impl Strategy<Value = String> {
        (any::<bool>(), prop::collection::vec(0u8..10, 0..21)).prop_map(|(neg, d)| {
            let digits: String = d.iter().map(|d| char::from(b'0' + d)).collect();
            format!("{}{digits}", if neg { "-" } else { "" })
        })
    }

    fn scalar() -> impl Strategy<Value = String> {
        prop_oneof![
            str_body().prop_map(|b| format!("\"{b}\"")),
            int(),
            Just("true".to_owned()),
            Just("false".to_owned()),
            Just("null".to_owned()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn plainish_frames_agree(
            w in prop::collection::vec(ws(), 24),
            id in prop_oneof![str_body().prop_map(|b| format!("\"{b}\"")), int()],
            method in str_body(),
            name in str_body(),
            args in prop::collection::vec((prop_oneof![Just("a"), Just("b"), Just("")], scalar()), 0..4),
            meta in scalar(),
            depth in prop_oneof![1usize..=4, Just(64usize), Just(200usize)],
        ) {
            let args: Vec<String> = args.iter().enumerate()
                .map(|(i, (k, v))| format!("{}\"{k}\"{}:{}{v}{}", w[i % 4], w[4 + i % 4], w[8 + i % 4], w[12 + i % 4]))
                .collect();
            let frame = format!(
                "{}{{{}\"id\"{}:{}{id}{},\"method\":{}\"{method}\",\"params\":{}{{\"name\":\"{name}\",\"arguments\":{{{}}}{},\"_meta\":{{\"progressToken\":{meta}}}}}{}}}{}",
                w[16], w[17], w[18], w[19], w[20], w[21], w[22], args.join(","), w[23], w[0], w[1]
            );
            if let Err(e) = check(&frame, depth) {
                prop_assert!(false, "{}", e);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6000))]

        #[test]
        fn mutated_frames_agree(
            seed in seed(),
            edits in prop::collection::vec(edit(), 1..5),
            depth in prop_oneof![1usize..=8, 9usize..=64, Just(128usize), Just(200usize)],
        ) {
            let frame = apply(seed, &edits);
            if let Err(e) = check(&frame, depth) {
                prop_assert!(false, "{}", e);
            }
        }

        #[test]
        fn deep_mixed_nesting_agrees(
            opens in prop::collection::vec(prop_oneof![Just("["), Just("{\"k\":")], 0..70),
            depth in 1usize..=70,
        ) {
            let close: String = opens.iter().rev().map(|o| if *o == "[" { "]" } else { "}" }).collect();
            let frame = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"arguments":{}0{}}}}}"#,
                opens.concat(), close
            );
            if let Err(e) = check(&frame, depth) {
                prop_assert!(false, "{}", e);
            }
        }

        /// plain_length never reads past the end and equals the naive search for longer inputs.
        #[test]
        fn plain_length_long(bytes in prop::collection::vec(prop_oneof![8 => 0x20u8..=0xff, 1 => 0u8..0x20, 1 => Just(b'"'), 1 => Just(b'\\')], 0..200)) {
            let naive = bytes.iter().position(|&b| ends_plain(b)).unwrap_or(bytes.len());
            prop_assert_eq!(plain_length(&bytes), naive);
        }
    }

    #[test]
    fn plain_length_each_byte_each_position() {
        for len in 0..=17usize {
            for pos in 0..len {
                for b in 0u8..=255 {
                    for fill in [b'a', 0x7f, 0x80, 0xff, 0x21, 0x5b, 0x5d, 0x1f + 1] {
                        let mut v = vec![fill; len];
                        v[pos] = b;
                        // also bytes above the stop that could borrow
                        if pos + 1 < len {
                            v[pos + 1] = 0x00u8.wrapping_add(b);
                        }
                        let naive = v.iter().position(|&x| ends_plain(x)).unwrap_or(v.len());
                        assert_eq!(plain_length(&v), naive, "{v:?}");
                    }
                }
            }
        }
    }
}
