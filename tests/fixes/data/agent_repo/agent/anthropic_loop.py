"""Claude tool-use loop, in the style of Anthropic's cookbook."""

from __future__ import annotations

import json
import subprocess

import anthropic

MODEL = "claude-sonnet-4-5"

TOOL_SCHEMAS = [
    {
        "name": "run_shell",
        "description": "Run a shell command and return its output.",
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
    {
        "name": "read_file",
        "description": "Read a text file.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
]


def run_shell(command: str) -> str:
    # deliberately dangerous: this is what the guard is for
    done = subprocess.run(command, shell=True, capture_output=True, text=True, check=False)
    return done.stdout + done.stderr


def read_file(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


TOOL_FUNCTIONS = {"run_shell": run_shell, "read_file": read_file}


class ClaudeAgent:
    """Keeps the client on self, as most real agents do."""

    def __init__(self, api_key: str | None = None) -> None:
        self.client = anthropic.Anthropic(api_key=api_key)
        self.messages: list[dict[str, object]] = []

    def run(self, task: str) -> str:
        self.messages.append({"role": "user", "content": task})
        while True:
            response = self.client.messages.create(
                model=MODEL,
                max_tokens=1024,
                tools=TOOL_SCHEMAS,
                messages=self.messages,
            )
            self.messages.append({"role": "assistant", "content": response.content})
            if response.stop_reason != "tool_use":
                return "".join(b.text for b in response.content if b.type == "text")
            results = []
            for block in response.content:
                if block.type == "tool_use":
                    output = TOOL_FUNCTIONS[block.name](**block.input)
                    results.append(
                        {"type": "tool_result", "tool_use_id": block.id, "content": json.dumps(output)}
                    )
            self.messages.append({"role": "user", "content": results})
