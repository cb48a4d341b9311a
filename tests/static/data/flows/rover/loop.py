from . import model
from .environment import Sandbox
from .parse import extract_action


def solve(task: str) -> str:
    env = Sandbox("/work")
    history = [{"role": "user", "content": task}]
    while True:
        text = model.query(history)
        history.append({"role": "assistant", "content": text})
        action = extract_action(text)
        if action == "exit":
            return text
        history.append({"role": "user", "content": env.execute(action)})
