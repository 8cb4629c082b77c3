"""The agent against a real instruction-tuned model: llama-cpp-python's server running SmolLM2-135M-Instruct.

Gemma 3 270M (tests/qgis/test_real_model.py) is a base model served with the
``gemma`` format, which drops the system prompt.  SmolLM2-135M-Instruct was
tuned to follow instructions and its GGUF carries its own chat template
(ChatML), which the server uses as it is: the system prompt and tool results
reach the model.  Here the agent is set up as a user would (provider
OpenAI-compatible, the server's base URL, the model's alias, a shorter answer
bound in the settings) and nothing changes the requests: the pass-through
proxy only records what was sent and streamed.  ``make llama`` builds the
server and fetches the model (harness/llama_server.py).
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from tests.support.dock import close_dock, items_of, open_dock, type_and_send
from tests.support.llama_server import LlamaServer, ShapingProxy, streamed_deltas, streamed_text
from tests.support.runs import wait_until

pytestmark = pytest.mark.real_model

ANSWER_TOKENS = 64  # the smallest answer bound the settings page allows; about 2 s of SmolLM2 on one thread
# What SmolLM2's template puts first when a conversation has no system message.
SMOLLM2_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def unchanged(body: dict[str, Any]) -> dict[str, Any]:
    """The proxy's shaping: none (it records the request and the streamed reply)."""
    return body


def chatml(messages: list[dict[str, Any]]) -> str:
    """The prompt SmolLM2's template makes of ``messages``, written out independently of the server."""
    turns = [] if messages[0]["role"] == "system" else [("system", SMOLLM2_SYSTEM)]
    turns += [(m["role"], m["content"]) for m in messages]
    assert all(isinstance(content, str) for _, content in turns)  # the template concatenates text only
    return "".join(f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in turns) + "<|im_start|>assistant\n"


def token_count(server: LlamaServer, text: str) -> int:
    """How many tokens the server's own tokenizer makes of ``text`` (special tokens as such)."""
    body = json.dumps({"input": text}).encode()
    request = urllib.request.Request(  # noqa: S310 - 127.0.0.1 only
        f"{server.url}/extras/tokenize/count", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310  # nosec B310
        return json.loads(response.read())["count"]


def use_server(server: LlamaServer, base_url: str) -> None:
    """The plugin's settings, as a user who picked this server in the dock would save them."""
    PlgOptionsManager.set_value("provider", "openai")
    PlgOptionsManager.set_value("openai_base_url", base_url)
    PlgOptionsManager.set_value("openai_model", server.model)
    PlgOptionsManager.set_value("temperature", 0.0)
    PlgOptionsManager.set_value("request_timeout", 120.0)
    PlgOptionsManager.set_value("max_answer_tokens", ANSWER_TOKENS)


def test_a_question_to_smollm2_streams_its_answer_into_the_dock(qgis_iface, demo_project, tmp_path, smollm2_server):
    from geogpt_qgis.gui.markdown_view import MarkdownView

    assert smollm2_server.model == "smollm2"
    with ShapingProxy(smollm2_server, unchanged) as proxy:
        use_server(smollm2_server, proxy.base_url)
        dock = open_dock(qgis_iface, demo_project, tmp_path / "store.sqlite")
        try:
            panel = dock.panel
            type_and_send(panel, "Say hello to the map makers of Elvbury.")
            seen: list[int] = []

            def shown() -> bool:
                views = items_of(panel, MarkdownView)
                seen.append(len(views[-1].source_text) if views else 0)
                return bool(panel.statuses)

            wait_until(shown, 120)
            assert panel.statuses == ["finished"], (panel.status.text(), proxy.replies[-1:] and proxy.replies[-1][:300])
            assert len(proxy.sent) == 1  # one model call: SmolLM2 answered in text
            deltas = [d["content"] for d in streamed_deltas(proxy.replies[0]) if d.get("content")]
            assert len(deltas) >= 5  # the server streamed the answer piece by piece
            final = items_of(panel, MarkdownView)[-1].source_text
            assert final.strip() and final.strip() == "".join(deltas).strip()  # all of it, and only it, shown
            assert any(0 < n < len(final) for n in seen)  # the dock showed it while it came
            first = proxy.sent[0]
            assert first["model"] == "smollm2" and first["stream"] is True and first["max_tokens"] == ANSWER_TOKENS
            assert first["messages"][0]["role"] == "system"  # the agent's system prompt, which ChatML renders
            assert first["messages"][-1]["content"].endswith("Say hello to the map makers of Elvbury.")

            # A second question in the same conversation: the server renders the whole conversation with the
            # GGUF's ChatML template (its prompt is, token for token, the ChatML text written out here), and
            # reuses from its cache at least all of the first prompt: the agent's prompts only grow at the end.
            smollm2_server.mark_log()
            # Saved again: every test process started in this folder shares one QGIS settings file, and another
            # one's clean-up may have reset it meanwhile (seen with several test runs at once on one machine).
            use_server(smollm2_server, proxy.base_url)
            type_and_send(panel, "Thank you. And goodbye.")
            wait_until(lambda: len(panel.statuses) == 2, 120)
            assert panel.statuses == ["finished", "finished"], panel.status.text()
            assert len(proxy.sent) == 2
            second = proxy.sent[1]["messages"]
            assert [m["role"] for m in second[-3:]] == ["user", "assistant", "user"]
            assert second[-2]["content"].strip() == streamed_text(proxy.replies[0]).strip()
            hits = smollm2_server.prefix_hits()
            assert len(hits) == 1, smollm2_server.new_log()[-2000:]
            reused, evaluated = hits[0]
            assert reused + evaluated == token_count(smollm2_server, chatml(second))
            assert reused >= token_count(smollm2_server, chatml(first["messages"]))
        finally:
            close_dock(dock)


def test_the_smollm2_server_facts_the_module_names(smollm2_server):
    """What llama-cpp-python's server does with SmolLM2's own template: roles, tools, and replies held to a schema."""
    server = smollm2_server
    log = server.log_text()
    assert "Using gguf chat template" in log and "Using fallback chat format" not in log
    # Every role is rendered (a tool result under the role "tool"); without a system message the template adds its
    # own. The prompt sizes are the server's; the text they are counted from is written out here.
    conversation = [
        {"role": "system", "content": "You are GeoGPT, in QGIS."},
        {"role": "user", "content": "Which layers are there?"},
        {"role": "assistant", "content": "", "tool_calls": [_call("describe_layer", "{}")]},
        {"role": "tool", "tool_call_id": "call_1", "content": "schools, hospitals, roads"},
    ]
    for messages in (conversation, conversation[1:2]):
        reply = server.chat(messages, max_tokens=1, temperature=0)
        assert reply["usage"]["prompt_tokens"] == token_count(server, chatml(messages))
    # Tools are not rendered, and with tool_choice absent they are never called: the same prompt, a text reply.
    schema = {"type": "object", "properties": {"layer": {"type": "string"}}, "required": ["layer"]}
    tools = [{"type": "function", "function": {"name": "describe_layer", "parameters": schema}}]
    question = [{"role": "user", "content": "Describe the schools layer."}]
    plain = server.chat(question, max_tokens=4, temperature=0)
    offered = server.chat(question, tools=tools, max_tokens=4, temperature=0)
    assert offered["usage"]["prompt_tokens"] == plain["usage"]["prompt_tokens"]
    assert not offered["choices"][0]["message"].get("tool_calls")
    # tool_choice naming the function: a call, its arguments under the schema's grammar.
    forced = server.chat(
        question,
        tools=tools,
        tool_choice={"type": "function", "function": {"name": "describe_layer"}},
        max_tokens=64,
        temperature=0,
    )
    call = forced["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "describe_layer"
    assert isinstance(json.loads(call["function"]["arguments"], strict=False)["layer"], str)
    # A reply held to a JSON schema: response_format json_object with a schema; OpenAI's json_schema is refused.
    guided = {
        "type": "object",
        "properties": {"tool": {"const": "describe_layer"}, "layer": {"enum": ["schools", "hospitals"]}},
        "required": ["tool", "layer"],
    }
    held_to = {"type": "json_object", "schema": guided}
    held = server.chat(question, response_format=held_to, max_tokens=40, temperature=0)
    answer = json.loads(held["choices"][0]["message"]["content"])
    assert answer["tool"] == "describe_layer" and answer["layer"] in ("schools", "hospitals")
    refused = {"type": "json_schema", "json_schema": {"name": "call", "schema": guided}}
    status, body = server.post_chat(question, response_format=refused, max_tokens=8)
    assert status == 500 and b"json_object" in body
    # An assistant message with content null is refused (GeoGPT sends "" to servers other than OpenAI's).
    status, body = server.post_chat([*conversation[:2], {**conversation[2], "content": None}, conversation[3]])
    assert status == 500 and b"validation error" in body


def _call(name: str, arguments: str) -> dict[str, Any]:
    return {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
