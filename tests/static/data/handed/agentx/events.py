import anthropic

client = anthropic.Anthropic()


def on_text(event):
    print(event.text)


def on_stop(event):
    print()


HANDLERS = {"text": on_text, "message_stop": on_stop}


def stream(prompt):
    with client.messages.stream(model="m", max_tokens=64, messages=[{"role": "user", "content": prompt}]) as events:
        for event in events:
            handler = HANDLERS.get(event.type)
            if handler is not None:
                handler(event)
