//! Mid-stream recovery (`gateway.streamRecovery`), per route: buffered,
//! a reply held to its terminal event fails over unseen; off, the client
//! gets today's terminal error.

use crate::gateway_truncated::{anthropic_unfinished, events, openai_finished};
use crate::harness;
use crate::upstream;

use harness::*;
use serde_json::json;
use upstream::{Behaviour, End};

async fn start_recovering(modes: &str) -> Harness {
    let top = format!("gateway: {{ streamRecovery: {modes} }},");
    start_setup(Setup {
        top: &top,
        ..Setup::default()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buffered_stream_cut_after_output_fails_over_unseen() {
    let h = start_recovering(r#"{ "/v1/chat/completions": "buffered" }"#).await;
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces: vec![openai_finished(&["partial ", "answ"])[0].clone()],
            end: End::Reset,
        },
    );
    let body = json!({"model": FALLBACK, "models": [PRIMARY], "stream": true,
                      "messages": [{"role": "user", "content": "hi"}]});
    let a = h
        .post("/v1/chat/completions", &body.to_string(), None)
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-model"), PRIMARY);
    let streamed = read_stream(&a.text);
    assert!(streamed.done, "{}", a.text);
    assert!(!streamed.text.contains("partial"), "{}", a.text);
    assert!(!streamed.text.is_empty());
    // The cut is the broken attempt's failure; the fallback's success.
    assert_eq!(h.usage("openai:a").last_used, None);
    assert!(h.usage("anthropic:a").last_used.is_some());
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_left_out_keeps_the_clean_error() {
    let h = start_recovering(r#"{ "/v1/chat/completions": "buffered" }"#).await;
    h.up.then(
        "claude-x",
        Behaviour::Sse {
            pieces: anthropic_unfinished("Once upon a time"),
            end: End::Close,
        },
    );
    let body = json!({"model": PRIMARY, "models": [FALLBACK], "max_tokens": 50, "stream": true,
                      "messages": [{"role": "user", "content": "a story"}]});
    let a = h.post("/v1/messages", &body.to_string(), None).await;
    let events = events(&a.text);
    assert_eq!(events.last().expect("events").0, "error", "{}", a.text);
    h.stop().await;
}
