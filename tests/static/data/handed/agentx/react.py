import json
import re

from .actions import REGISTRY

PROMPT = "Reply with JSON {\"action\": ..., \"input\": ...}"


class ReActAgent:
    def __init__(self, model):
        self.model = model
        self.transcript = [{"role": "system", "content": PROMPT}]

    def parse(self, text):
        m = re.search(r"\{.*\}", text, re.S)
        return json.loads(m.group(0)) if m else {"action": "finish", "input": text}

    def act(self, decision):
        handler = REGISTRY.get(decision["action"])
        if handler is None:
            return "no such action"
        return handler(decision.get("input", ""))

    def loop(self, goal):
        self.transcript.append({"role": "user", "content": goal})
        while True:
            text = self.model.generate(self.transcript)
            decision = self.parse(text)
            if decision["action"] == "finish":
                return decision["input"]
            obs = self.act(decision)
            self.transcript.append({"role": "user", "content": f"Observation: {obs}"})
