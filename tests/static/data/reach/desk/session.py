from .chat import Handler


async def converse(model, messages):
    handler = Handler()
    while True:
        reply = await handler.turn(model, messages)
        messages.append(reply)
