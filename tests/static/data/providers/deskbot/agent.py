from deskbot.config import planner


def run(task):
    messages = [{"role": "user", "content": task}]
    while True:
        message = planner.call(messages)
        messages.append({"role": "assistant", "content": message.content})
        if "DONE" in (message.content or ""):
            return message.content
        messages.append({"role": "user", "content": "continue"})
