def blank():
    return {"role": "assistant"}


class Message:
    def __init__(self):
        self.tool_calls = []


def record(queue):
    message = Message()
    while queue:
        message.tool_calls.append(queue.pop())
    return message
