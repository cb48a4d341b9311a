"""``if``/``elif`` chains on what the model wrote (issue 20): a branch that tests something
again runs the project code of each of its arms (``scroll_up``/``scroll_down`` under ``if
action == "scroll"``); a chain inside a branch whose arms all run one callee only shapes that
tool's input (``goto(url)`` or ``goto("https://" + url)``): it is no second dispatch."""

from __future__ import annotations

from guardkit.codemods.scanner import scan_source

AGENT = """\
import json

from openai import OpenAI

client = OpenAI()


class Browser:
    def scroll_up(self):
        return "up"

    def scroll_down(self):
        return "down"

    def goto(self, url):
        return url

    def type(self, text):
        return text


def step(browser: Browser, messages):
    reply = client.chat.completions.create(model="m", messages=messages)
    act = json.loads(reply.choices[0].message.content)
    if act["action"] == "scroll":
        if int(act.get("pixels", 0)) > 0:
            browser.scroll_up()
        else:
            browser.scroll_down()
    elif act["action"] == "visit":
        url = str(act["url"])
        if url.startswith("http"):
            browser.goto(url)
        elif " " in url:
            browser.goto("https://search.example/?q=" + url)
        else:
            browser.goto("https://" + url)
    elif act["action"] == "type":
        browser.type(act["text"])
"""


def _found(source: str) -> set[tuple[str, int, str]]:
    findings = scan_source(source, "agent.py").findings
    return {(f.rule, f.line, f.symbol) for f in findings if f.rule in {"GK201", "GK202"}}


def test_each_arm_of_a_test_inside_a_branch_runs_a_tool_and_one_chain_is_the_dispatch() -> None:
    assert _found(AGENT) == {
        ("GK201", 9, "Browser.scroll_up"),
        ("GK201", 12, "Browser.scroll_down"),
        ("GK201", 15, "Browser.goto"),
        ("GK201", 18, "Browser.type"),
        ("GK202", 25, "if act['action'] == ..."),
    }
    before = AGENT.replace('        elif " " in url:\n', '        elif url.startswith("www"):\n')
    assert _found(before) == _found(AGENT)


def test_an_inner_chain_running_two_callees_is_a_dispatch_of_its_own() -> None:
    source = AGENT.replace('browser.goto("https://search.example/?q=" + url)', "browser.type(url)")
    assert ("GK202", 32, "if url.startswith('http') ...") in _found(source)


TEMPLATE = """\
import json

from openai import OpenAI


class Env:
    def click(self, x, y):
        return (x, y)

    def shell(self, command):
        return command

    def drag(self, x, y):
        return (x, y)


class BaseAgent:
    def __init__(self):
        self.client = OpenAI()

    def run(self, env: Env, messages):
        for _ in range(10):
            reply = self.client.chat.completions.create(model="m", messages=messages)
            self.act(env, json.loads(reply.choices[0].message.content))

    def act(self, env: Env, action):
        if action["name"] == "click":
            env.click(action["x"], action["y"])


class ShellAgent(BaseAgent):
    def act(self, env: Env, action):
        if action["name"] == "shell":
            return env.shell(action["command"])
        elif action["name"] == "drag":
            return env.drag(action["x"], action["y"])
        return super().act(env, action)
"""


def test_what_the_base_hands_its_hook_reaches_the_subclasses_override() -> None:
    tools = {s for r, _, s in _found(TEMPLATE) if r == "GK201"}
    assert {"Env.shell", "Env.drag"} <= tools
    assert ("GK202", 33, "if action['name'] == ...") in _found(TEMPLATE)
