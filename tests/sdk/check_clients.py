"""The official OpenAI and Anthropic Python SDKs against a running gateway.

Run by tests/sdk.rs with the gateway's address in FAILOVER_BASE. The
gateway's upstream is the tests' fault-injecting one (tests/gateway/
emulation.rs): a fault named in a prompt as `<fault>:<model>` makes that
model fail so (`down:claude-x` answers 503, `cut:claude-x` cuts its stream;
tests/gateway/faults.rs), and a request offering tools gets a call of the
first one with {"city": "Oslo"}.
The chain is anthropic/claude-x, then openai/gpt-x; the alias `gpt` is
openai/gpt-x alone.

Every check prints `ok <name>`; the Rust side checks that all of them ran.
Run as `check_clients.py GROUP…` (see GROUPS).
"""

import json
import os
import sys

import anthropic
import openai

BASE = os.environ["FAILOVER_BASE"]
PRIMARY = "anthropic/claude-x"
FALLBACK = "openai/gpt-x"
TOOLS_OPENAI = [{"type": "function", "function": {
    "name": "weather", "description": "today's weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
TOOLS_ANTHROPIC = [{"name": "weather", "description": "today's weather",
                    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                                     "required": ["city"]}}]
USER = [{"role": "user", "content": "hi"}]


def ok(name):
    print(f"ok {name}", flush=True)


def openai_checks():
    client = openai.OpenAI(base_url=f"{BASE}/v1", api_key="unused", max_retries=0)

    ids = [m.id for m in client.models.list()]
    assert "auto" in ids and PRIMARY in ids and "gpt" in ids, ids
    ok("openai models list")

    raw = client.chat.completions.with_raw_response.create(model="auto", messages=USER)
    reply = raw.parse()
    assert reply.choices[0].message.content.startswith("hello from claude-x"), reply
    assert raw.headers["x-failover-model"] == PRIMARY
    assert reply.usage.completion_tokens == 5, reply.usage
    ok("openai chat")

    text = ""
    for chunk in client.chat.completions.create(model="auto", messages=USER, stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
    assert text.startswith("hello from claude-x"), text
    ok("openai stream")

    for model in ["auto", "gpt"]:
        reply = client.chat.completions.create(model=model, messages=USER, tools=TOOLS_OPENAI)
        call = reply.choices[0].message.tool_calls[0]
        assert call.function.name == "weather", call
        assert json.loads(call.function.arguments) == {"city": "Oslo"}, call
        assert reply.choices[0].finish_reason == "tool_calls", reply
    ok("openai tools")

    for model in ["auto", "gpt"]:
        with client.chat.completions.stream(model=model, messages=USER, tools=TOOLS_OPENAI) as stream:
            final = stream.get_final_completion()
        call = final.choices[0].message.tool_calls[0]
        assert call.function.name == "weather" and json.loads(call.function.arguments) == {"city": "Oslo"}, final
    ok("openai tools streamed")

    # n, logprobs, refusals, the fingerprint and usage details come through
    # from an OpenAI-shaped upstream, whole and streamed.
    reply = client.chat.completions.create(model="gpt", messages=USER, n=3, logprobs=True)
    assert [c.index for c in reply.choices] == [0, 1, 2], reply
    assert reply.choices[1].message.content == "choice 1", reply
    assert reply.choices[2].message.refusal == "I can't help with that.", reply
    assert reply.choices[0].logprobs.content[0].token == "choice 0", reply
    assert reply.system_fingerprint == "fp_emulated", reply
    assert reply.usage.prompt_tokens_details.cached_tokens == 3, reply.usage
    assert reply.usage.completion_tokens_details.reasoning_tokens == 2, reply.usage
    with client.chat.completions.stream(model="gpt", messages=USER, n=3, logprobs=True,
                                        stream_options={"include_usage": True}) as stream:
        final = stream.get_final_completion()
    assert [c.message.content for c in final.choices[:2]] == ["choice 0", "choice 1"], final
    assert final.choices[2].message.refusal == "I can't help with that.", final
    assert final.choices[1].logprobs.content[0].token == "choice 1", final
    assert final.system_fingerprint == "fp_emulated", final
    assert final.usage.prompt_tokens_details.cached_tokens == 3, final.usage
    ok("openai faithful replies")

    # JSON mode has no Anthropic counterpart: the Anthropic primary is
    # passed over and OpenAI answers.
    raw = client.chat.completions.with_raw_response.create(
        model="auto", messages=USER, response_format={"type": "json_object"})
    assert json.loads(raw.parse().choices[0].message.content) == {"ok": True}
    assert raw.headers["x-failover-model"] == FALLBACK, raw.headers
    ok("openai json mode")



def openai_outages():
    client = openai.OpenAI(base_url=f"{BASE}/v1", api_key="unused", max_retries=0)

    raw = client.chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": "hi down:claude-x"}])
    assert raw.headers["x-failover-model"] == FALLBACK
    assert raw.parse().choices[0].message.content.startswith("hello from gpt-x")
    ok("openai outage with fallback")

    try:
        client.chat.completions.create(
            model="auto", messages=[{"role": "user", "content": "down:claude-x down:gpt-x"}])
        raise AssertionError("everything down must be an error")
    except openai.APIStatusError as error:
        assert error.status_code == 503, error
        assert error.body["code"] == "overloaded", error.body
        assert [a["model"] for a in error.body["attempts"]][-1] == FALLBACK, error.body
    ok("openai everything failing")


def anthropic_checks():
    client = anthropic.Anthropic(base_url=BASE, api_key="unused", max_retries=0)

    ids = [m.id for m in client.models.list()]
    assert "auto" in ids and "gpt" in ids, ids
    ok("anthropic models list")

    raw = client.messages.with_raw_response.create(model="auto", max_tokens=100, messages=USER)
    message = raw.parse()
    assert message.content[0].type == "text" and message.content[0].text.startswith("hello from claude-x"), message
    assert message.stop_reason == "end_turn" and message.usage.output_tokens == 5, message
    assert raw.headers["x-failover-model"] == PRIMARY
    ok("anthropic chat")

    for model, start in [("auto", "hello from claude-x"), ("gpt", "hello from gpt-x")]:
        with client.messages.stream(model=model, max_tokens=100, messages=USER) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
        assert text.startswith(start), text
        assert final.content[0].text == text, final
    ok("anthropic stream")

    for model in ["auto", "gpt"]:
        message = client.messages.create(model=model, max_tokens=100, messages=USER, tools=TOOLS_ANTHROPIC)
        use = [b for b in message.content if b.type == "tool_use"][0]
        assert use.name == "weather" and use.input == {"city": "Oslo"}, message
        assert message.stop_reason == "tool_use", message
    ok("anthropic tools")

    for model in ["auto", "gpt"]:
        with client.messages.stream(model=model, max_tokens=100, messages=USER, tools=TOOLS_ANTHROPIC) as stream:
            final = stream.get_final_message()
        use = [b for b in final.content if b.type == "tool_use"][0]
        assert use.name == "weather" and use.input == {"city": "Oslo"}, final
        assert final.stop_reason == "tool_use", final
    ok("anthropic tools streamed")

    # The tool's result goes back in both upstream shapes.
    for model in ["auto", "gpt"]:
        message = client.messages.create(model=model, max_tokens=100, tools=TOOLS_ANTHROPIC, messages=[
            {"role": "user", "content": "weather in Oslo?"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "4C"}]},
        ])
        assert message.content[0].type == "text", message
    ok("anthropic tool results")

    try:
        client.messages.create(model="no-such-model", max_tokens=10, messages=USER)
        raise AssertionError("an unknown model must be an error")
    except anthropic.NotFoundError as error:
        assert "no-such-model" in error.body["error"]["message"], error.body
    ok("anthropic unknown model")


def anthropic_outages():
    client = anthropic.Anthropic(base_url=BASE, api_key="unused", max_retries=0)

    raw = client.messages.with_raw_response.create(
        model="auto", max_tokens=100, messages=[{"role": "user", "content": "hi down:claude-x"}])
    assert raw.headers["x-failover-model"] == FALLBACK
    assert raw.parse().content[0].text.startswith("hello from gpt-x")
    ok("anthropic outage with fallback")

    try:
        client.messages.create(model="auto", max_tokens=100,
                               messages=[{"role": "user", "content": "down:claude-x down:gpt-x"}])
        raise AssertionError("everything down must be an error")
    except anthropic.APIStatusError as error:
        assert error.status_code == 503, error
        assert error.body["error"]["type"] == "overloaded_error", error.body
    ok("anthropic everything failing")


def openai_recovery():
    """On a gateway whose streams continue (`gateway.streamRecovery`)."""
    client = openai.OpenAI(base_url=f"{BASE}/v1", api_key="unused", max_retries=0)
    chunks = list(client.chat.completions.create(
        model="auto", stream=True, messages=[{"role": "user", "content": "hi cut:claude-x"}]))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("The answer ") and text.endswith("hello from gpt-x with oai-a"), text
    restarts = [c for c in chunks if (c.model_extra or {}).get("failover")]
    assert len(restarts) == 1 and restarts[0].failover["model"] == FALLBACK, chunks
    assert chunks[-1].model == FALLBACK, chunks[-1]
    ok("openai stream continued")


def anthropic_recovery():
    """On a gateway whose streams continue (`gateway.streamRecovery`)."""
    client = anthropic.Anthropic(base_url=BASE, api_key="unused", max_retries=0)
    with client.messages.stream(model="auto", max_tokens=100,
                                messages=[{"role": "user", "content": "hi cut:claude-x"}]) as stream:
        message = stream.get_final_message()
    texts = [block.text for block in message.content]
    assert texts == ["The answer ", "hello from gpt-x with oai-a"], texts
    assert message.stop_reason == "end_turn", message
    ok("anthropic stream continued")


# Outages leave profiles cooling down: each group runs on a fresh gateway.
GROUPS = {
    "openai": openai_checks,
    "anthropic": anthropic_checks,
    "openai-outages": openai_outages,
    "anthropic-outages": anthropic_outages,
    "openai-recovery": openai_recovery,
    "anthropic-recovery": anthropic_recovery,
}

if __name__ == "__main__":
    for group in sys.argv[1:]:
        GROUPS[group]()
