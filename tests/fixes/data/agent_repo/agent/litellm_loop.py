"""A litellm loop with a dispatch dict and a model-controlled stop condition."""

import json

import litellm as llm


def lookup(sku: str) -> dict:
    return {"sku": sku, "price": 3}


def buy(sku: str, quantity: int) -> str:
    return "ok"


DISPATCH_TOOLS = {"lookup": lookup, "buy": buy}


def shop(goal: str) -> None:
    messages = [{"role": "user", "content": goal}]
    done = False
    while not done:
        reply = llm.completion(model="gpt-4o", messages=messages, tools=[])
        calls = reply.choices[0].message.tool_calls or []
        done = not calls
        for call in calls:
            fn = DISPATCH_TOOLS.get(call.function.name)
            result = fn(**json.loads(call.function.arguments))  # run the tool
            messages.append({"role": "tool", "content": str(result)})
