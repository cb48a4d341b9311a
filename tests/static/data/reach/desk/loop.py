from .step import next_action


def run(messages):
    while True:
        reply = next_action(messages)
        if reply.done:
            return reply
