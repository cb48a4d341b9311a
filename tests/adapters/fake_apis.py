"""Local fake Anthropic and DeepSeek APIs that the real SDK clients talk to over HTTP.

Loaded by path (``load_fakes``) from the conftests of tests/adapters and tests/examples.

Each fake serves scripted replies on 127.0.0.1 and enforces the wire rules the adapters must
respect, answering 400 with the provider's error shape like the real API:

- Anthropic: thinking blocks come back byte-identical (the signature is an HMAC the fake issued
  over the thinking text), redacted-thinking data is one the fake issued, and every ``tool_use``
  has its ``tool_result`` in the next user message.
- DeepSeek: with ``deepseek-reasoner``, every earlier assistant message carries the
  ``reasoning_content`` the fake issued for it, and every tool call is answered by a tool message.
"""

from __future__ import annotations

import abc
import hashlib
import hmac
import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_KEY = b"fake-api-signing-key"


def sign(text: str) -> str:
    return hmac.new(_KEY, text.encode(), hashlib.sha256).hexdigest()


class FakeAPI(abc.ABC):
    """A scripted JSON API; ``reply(body)`` returns ``(status, payload)``."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.script: list[Any] = []
        self.ids = itertools.count(1)
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                api.requests.append(body)
                api.headers.append({k.lower(): v for k, v in self.headers.items()})
                status, payload = api.reply(self.path, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def next_step(self, body: dict[str, Any]) -> Any:
        step = self.script.pop(0) if self.script else {"text": "(script ended)"}
        return step(body) if callable(step) else step

    @abc.abstractmethod
    def reply(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        """Each fake answers its own wire format."""


class FakeAnthropic(FakeAPI):
    """``POST /v1/messages``. Script steps: ``{"content": [...], "stop_reason": ..., ...}``."""

    def __init__(self) -> None:
        super().__init__()
        self.redacted: set[str] = set()

    def reply(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        assert path.startswith("/v1/messages"), path
        problem = self.check(body)
        if problem is not None:
            return 400, {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": problem},
            }
        step = self.next_step(body)
        if "status" in step:
            return step["status"], step["payload"]
        content = [self.issue(block) for block in step["content"]]
        return 200, {
            "id": f"msg_{next(self.ids)}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": step.get("stop_reason", "end_turn"),
            "stop_details": step.get("stop_details"),
            "stop_sequence": None,
            "usage": step.get("usage", {"input_tokens": 100, "output_tokens": 20}),
        }

    def issue(self, block: dict[str, Any]) -> dict[str, Any]:
        if block["type"] == "thinking":
            return {**block, "signature": sign(block["thinking"])}
        if block["type"] == "redacted_thinking":
            self.redacted.add(block["data"])
        if block["type"] == "tool_use":
            return {"id": f"toolu_{next(self.ids)}", **block}
        return block

    def check(self, body: dict[str, Any]) -> str | None:
        messages = body["messages"]
        for i, message in enumerate(messages):
            content = message["content"]
            if message["role"] != "assistant" or isinstance(content, str):
                continue
            for j, block in enumerate(content):
                where = f"messages.{i}.content.{j}"
                if block["type"] == "thinking" and block.get("signature") != sign(
                    block["thinking"]
                ):
                    return f"{where}: Invalid `signature` in `thinking` block"
                if block["type"] == "redacted_thinking" and block["data"] not in self.redacted:
                    return f"{where}: Invalid `data` in `redacted_thinking` block"
            uses = {b["id"] for b in content if b["type"] == "tool_use"}
            following = messages[i + 1]["content"] if i + 1 < len(messages) else []
            answered = {
                b["tool_use_id"]
                for b in following
                if isinstance(b, dict) and b["type"] == "tool_result"
            }
            if uses and i + 1 < len(messages) and not uses <= answered:
                return (
                    f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(sorted(uses - answered))}"
                )
        return None


class FakeDeepSeek(FakeAPI):
    """``POST /v1/chat/completions``. Script steps: ``{"content", "reasoning", "tool_calls"}``."""

    def __init__(self) -> None:
        super().__init__()
        self.reasoning: set[str] = set()

    def reply(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        assert path == "/v1/chat/completions", path
        problem = self.check(body)
        if problem is not None:
            return 400, {
                "error": {
                    "message": problem,
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_request_error",
                }
            }
        step = self.next_step(body)
        message: dict[str, Any] = {"role": "assistant", "content": step.get("content")}
        if "refusal" in step:
            message["refusal"] = step["refusal"]
        if "reasoning" in step:
            self.reasoning.add(step["reasoning"])
            message["reasoning_content"] = step["reasoning"]
        calls = step.get("tool_calls", [])
        if calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{next(self.ids)}",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
                for name, arguments in calls
            ]
        finish = step.get("finish_reason", "tool_calls" if calls else "stop")
        return 200, {
            "id": f"chatcmpl-{next(self.ids)}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
        }

    def check(self, body: dict[str, Any]) -> str | None:
        messages = body["messages"]
        thinking = body["model"] == "deepseek-reasoner"
        for i, message in enumerate(messages):
            if message["role"] != "assistant":
                continue
            if thinking and message.get("reasoning_content") not in self.reasoning:
                return (
                    f"Missing `reasoning_content` field in the assistant message at message "
                    f"index {i}. For more information, please refer to "
                    "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
                )
            ids = [call["id"] for call in message.get("tool_calls") or []]
            answers = {m.get("tool_call_id") for m in messages[i + 1 : i + 1 + len(ids)]}
            if ids and i + 1 < len(messages) and not set(ids) <= answers:
                return (
                    "An assistant message with 'tool_calls' must be followed by tool messages "
                    "responding to each 'tool_call_id'."
                )
        return None
