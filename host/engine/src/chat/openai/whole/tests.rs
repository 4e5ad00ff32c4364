//! Reading and relaying whole replies.

use super::*;

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
