import asyncio
import json

from openai import AsyncOpenAI

from .handlers import HANDLERS

client = AsyncOpenAI()
SCHEMAS = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in HANDLERS]


async def call_one(fn_id: str, raw: str) -> str:
    handler = HANDLERS.get(fn_id)
    return str(handler(**json.loads(raw)))


async def answer(question: str) -> str:
    messages = [{"role": "user", "content": question}]
    while True:
        reply = await client.chat.completions.create(
            model="gpt-4.1", messages=messages, tools=SCHEMAS
        )
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message)
        pairs = [(c.function.name, c.function.arguments) for c in message.tool_calls]
        outputs = await asyncio.gather(*(call_one(fn_id, raw) for fn_id, raw in pairs))
        for call, output in zip(message.tool_calls, outputs):
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
