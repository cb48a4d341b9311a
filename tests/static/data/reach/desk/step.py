import acme_llm

_client = acme_llm.Client()


def next_action(messages):
    reply = _client.chat(messages=messages)
    for call in reply.tool_calls:
        messages.append({"role": "tool", "name": call.name})
    return reply
