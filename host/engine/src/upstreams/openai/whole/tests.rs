//! Reading and relaying whole replies.

use super::*;
use crate::wire::json::whole_reply::push_decimal;

fn rendered(text: &str) -> String {
    match read(text.to_owned()) {
        Ok(read) => read.reply.render("gw-1", "openai/m", 7),
        Err(_) => panic!("not read: {text}"),
    }
}

#[test]
fn a_reply_goes_back_member_by_member_with_only_the_gateways_fields_replaced() {
    let text = r#"{"id":"up-9","object":"chat.completion","created":1700000000,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"logprobs":{"content":[{"token":"hi","logprob":-1.2e-5}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1},"system_fingerprint":"fp_1","service_tier":"default","score":0.12345678901234567890123}"#;
    let out = rendered(text);
    // Numbers exactly as the upstream wrote them, members in its order.
    assert_eq!(
        out,
        text.replace("up-9", "gw-1")
            .replace("\"gpt-x\"", "\"openai/m\"")
    );
    let value: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["created"], 1_700_000_000);
}

#[test]
fn missing_fields_are_added_and_a_repeated_member_keeps_its_last_value() {
    let out = rendered(r#"{"choices":[{"message":{"content":"x"}}],"n":1,"n":2}"#);
    let value: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["n"], 2);
    assert_eq!(out.matches("\"n\"").count(), 1, "{out}");
    assert_eq!(
        (
            &value["id"],
            &value["model"],
            &value["object"],
            &value["created"]
        ),
        (
            &Value::from("gw-1"),
            &Value::from("openai/m"),
            &Value::from("chat.completion"),
            &Value::from(7)
        )
    );
}

#[test]
fn a_reply_of_many_members_is_relayed_in_one_pass() {
    let mut text = String::from(r#"{"choices":[{"message":{"content":"x"}}]"#);
    for index in 0..50_000 {
        text.push_str(&format!(r#","m{}":{index}"#, index % 1000));
    }
    text.push('}');
    let value: Value = serde_json::from_str(&rendered(&text)).unwrap();
    assert_eq!(value.as_object().unwrap().len(), 1000 + 5);
    assert_eq!(value["m7"], 49_007);
}

#[test]
fn names_and_ids_with_escapes_stay_valid_json() {
    let text = r#"{"id":"a\"b","we\"ird":"\u00e9\n","choices":[{"message":{"content":"x"}}]}"#;
    let read = read(text.to_owned()).ok().unwrap();
    assert_eq!(read.id, "a\"b");
    let out = read.reply.render("id \"quoted\"", "m\\n", 1);
    let value: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["we\"ird"], "é\n");
    assert_eq!(
        (value["id"].as_str(), value["model"].as_str()),
        (Some("id \"quoted\""), Some("m\\n"))
    );
}

#[test]
fn what_is_not_a_completion_or_is_an_in_band_error_is_not_read() {
    for text in [
        "<html>oops</html>",
        "[1,2]",
        r#"{"choices":[]}"#,
        r#"{"choices":{"0":{"message":{}}}}"#,
        r#"{"choices":[{"finish_reason":"stop"}]}"#,
        r#"{"choices":[{"message":{}}]"#,
        r#"{"choices":[5]}"#,
        r#"{"choices":[null]}"#,
    ] {
        assert!(
            matches!(read(text.to_owned()), Err((Unread::NotACompletion, _))),
            "{text}"
        );
    }
    let error = r#"{"error":{"message":"overloaded"},"choices":[{"message":{}}]}"#;
    assert!(matches!(
        read(error.to_owned()),
        Err((Unread::InBandError, _))
    ));
    // A null error is no error (however spaced); a null message is an
    // empty one.
    let read = read(r#"{ "error" : null , "choices" : [ { "message" : null } ] }"#.to_owned())
        .ok()
        .unwrap();
    assert!(read.message_extra.is_empty() && read.content.is_none());
}

/// The reply read member by member says what a parsed tree of it says.
#[test]
fn the_first_choice_and_usage_read_as_from_a_parsed_tree() {
    for text in [
        r#"{"choices":[{"message":{"role":"assistant","content":"hi","refusal":null,"tool_calls":[{"id":"t"}]},"finish_reason":"tool_calls"}]}"#,
        r#"{"choices":[{"message":{"content":["part"],"x":1,"x":null,"y":null,"y":2}}],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#,
        r#"{"choices":[{"message":{"content":"a","content":"b\u00e9"},"finish_reason":null}],"usage":{"prompt_tokens":1}}"#,
        r#"{"choices":[{"message":{"c\u006fntent":"esc"},"finish_reason":"odd"}],"usage":{"prompt_tokens":1.5,"completion_tokens":2}}"#,
        r#"{"choices":[{"message":5}],"usage":{"prompt_tokens":18446744073709551615,"completion_tokens":0,"prompt_tokens_details":{"cached_tokens":7},"completion_tokens_details":null}}"#,
        r#"{"choices":[{"message":{}}],"usage":{"prompt_tokens":3,"completion_tokens":4,"prompt_tokens_details":[1],"completion_tokens_details":{"reasoning_tokens":2,"reasoning_tokens":9}}}"#,
        r#"{"choices":[{"message":{}}],"usage":[1,2]}"#,
        r#"{"choices":[{"message":{}}],"usage":{"prompt_tokens":18446744073709551616,"completion_tokens":1}}"#,
        r#"{"choices":[{"message":{"content":"a"},"message":{"x":1}}]}"#,
        r#"{"choices":[{"message":[1,{"a":2}],"finish_reason":{"x":"stop"}},{"message":"later"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":[3]}}}"#,
        r#"{"choices":[{"finish_reason":"st\u006fp","message":{"role":"assistant","content":null,"refusal":"no"}}],"usage":{"completion_tokens":-1,"prompt_tokens":2}}"#,
        r#"{"choices":[{"message":{"content":true}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"completion_tokens_details":{"reasoning_tokens":1.0,"cached_tokens":4},"prompt_tokens_details":{"reasoning_tokens":3}}}"#,
    ] {
        assert!(read(text.to_owned()).is_ok(), "{text}");
        super::agreement::check_against_tree(text);
    }
}

/// The usual reply, however it is spaced, is read in one pass, and that
/// pass reads what splitting it into members first reads; a reply the
/// pass cannot read (an escaped name, a member of another shape, text that
/// is not JSON) is left to the two passes.
#[test]
fn the_one_pass_reads_what_two_passes_read_and_declines_the_rest() {
    let answered = [
        r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
        " \r\n{ \"id\" :\t\"c\" ,\n \"choices\"\n:\n[ {\"message\" : {\"content\":\"a,b}\"} } ] , \"\":{} ,\"n\":[1 , 2] } \n",
        r#"{"choices":[{"message":null}],"usage":null,"id":5,"error":null,"x":"\"},\"y\":1"}"#,
        r#"{"error":{"message":"no"},"choices":[]}"#,
        r#"{"choices":[{"message":{}}],"choices":[],"id":"a","id":"b","usage":{"prompt_tokens":1,"completion_tokens":2},"usage":7}"#,
        r#"{}"#,
    ];
    for text in answered {
        assert!(one_pass::read(text).is_some(), "declined: {text}");
        super::agreement::check_one_pass(text);
        super::agreement::check_against_tree(text);
    }
    let declined = [
        r#"{"\u0069d":"c","choices":[{"message":{}}]}"#,
        r#"{"choices":5}"#,
        r#"{"choices":[7]}"#,
        r#"{"choices":[{"message":{}}]"#,
        r#"[{"choices":[{"message":{}}]}]"#,
        r#"{"choices":[{"message":{}}]} x"#,
    ];
    for text in declined {
        assert!(one_pass::read(text).is_none(), "answered: {text}");
        super::agreement::check_against_tree(text);
    }
    assert_eq!(
        rendered(answered[1]),
        r#"{"id":"gw-1","choices":[ {"message" : {"content":"a,b}"} } ],"":{},"n":[1 , 2],"model":"openai/m","object":"chat.completion","created":7}"#
    );
}

#[test]
fn numbers_are_written_in_decimal() {
    for number in [0, 7, 10, 1_700_000_000, u64::MAX] {
        let mut out = String::from("x");
        push_decimal(&mut out, number);
        assert_eq!(out, format!("x{number}"));
    }
}

mod properties {
    use proptest::prelude::*;

    /// A JSON value of a kind that may stand where the reader reads: the
    /// shapes it takes and the ones it must decline or read as absent
    /// (escapes, numbers out of the plain integers, lone surrogates).
    fn value() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "null",
            "true",
            "0",
            "-0",
            "7",
            "-7",
            "3.5",
            "1e3",
            "1e999",
            "18446744073709551616",
            "\"ok\"",
            "\"a\\nb\"",
            "\"\\u00e9\"",
            "\"\\ud800\"",
            "\"余额\"",
            "[]",
            "[1,{\"a\":2}]",
            "{}",
            "{\"\\u0061\":1}",
            "{\"a\":\"\\ud800\"}",
        ])
        .prop_map(str::to_owned)
    }

    /// A message object: `role`, `content` and other members.
    fn message() -> impl Strategy<Value = String> {
        let member = prop_oneof![
            Just(r#""role":"assistant""#.to_owned()),
            value().prop_map(|v| format!(r#""content":{v}"#)),
            value().prop_map(|v| format!(r#""refusal":{v}"#)),
            Just(r#""annotations":[]"#.to_owned()),
            value().prop_map(|v| format!(r#""tool_calls":{v}"#)),
        ];
        prop_oneof![
            3 => prop::collection::vec(member, 0..5).prop_map(|m| format!("{{{}}}", m.join(","))),
            1 => value(),
        ]
    }

    /// A `usage` value, its details included.
    fn usage() -> impl Strategy<Value = String> {
        let details = || {
            (value(), value())
                .prop_map(|(c, r)| format!(r#"{{"cached_tokens":{c},"reasoning_tokens":{r}}}"#))
        };
        let member = prop_oneof![
            value().prop_map(|v| format!(r#""prompt_tokens":{v}"#)),
            Just(r#""prompt_tokens":12"#.to_owned()),
            Just(r#""completion_tokens":3"#.to_owned()),
            value().prop_map(|v| format!(r#""completion_tokens":{v}"#)),
            details().prop_map(|d| format!(r#""prompt_tokens_details":{d}"#)),
            details().prop_map(|d| format!(r#""completion_tokens_details":{d}"#)),
            value().prop_map(|v| format!(r#""prompt_tokens_details":{v}"#)),
        ];
        prop_oneof![
            3 => prop::collection::vec(member, 0..5).prop_map(|m| format!("{{{}}}", m.join(","))),
            1 => value(),
        ]
    }

    /// A reply's members, in any order, some repeated.
    fn reply() -> impl Strategy<Value = String> {
        let choice = (message(), value()).prop_map(|(message, finish)| {
            format!(r#"{{"index":0,"message":{message},"finish_reason":{finish},"logprobs":null}}"#)
        });
        let member = prop_oneof![
            value().prop_map(|v| format!(r#""id":{v}"#)),
            Just(r#""id":"chatcmpl-1""#.to_owned()),
            Just(r#""object":"chat.completion""#.to_owned()),
            Just(r#""created":1764000000"#.to_owned()),
            prop::collection::vec(choice, 0..3)
                .prop_map(|c| format!(r#""choices":[{}]"#, c.join(","))),
            usage().prop_map(|u| format!(r#""usage":{u}"#)),
            value().prop_map(|v| format!(r#""error":{v}"#)),
            value().prop_map(|v| format!(r#""system_fingerprint":{v}"#)),
        ];
        prop::collection::vec(member, 0..7).prop_map(|m| format!("{{{}}}", m.join(" , ")))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Whole, cut short, or with JSON's characters spliced in: the
        /// reader reads what a tree of the text says, and where the one-pass
        /// reader answers, the two-pass one reads the same.
        #[test]
        fn a_reply_reads_as_its_tree_whole_or_damaged(
            text in reply(),
            cut in any::<prop::sample::Index>(),
            splice in "[\\]\\[{}\":,0-9a-z\\\\ ]{0,3}",
        ) {
            super::super::agreement::check_against_tree(&text);
            let at = (0..=text.len())
                .filter(|i| text.is_char_boundary(*i))
                .nth(cut.index(text.len() + 1))
                .unwrap_or(0);
            super::super::agreement::check_against_tree(&text[..at]);
            super::super::agreement::check_against_tree(&format!("{}{splice}{}", &text[..at], &text[at..]));
        }
    }
}
