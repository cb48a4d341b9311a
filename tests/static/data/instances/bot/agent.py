import json

from openai import AsyncOpenAI

from bot.controller import cache, registry

client = AsyncOpenAI()


async def step(messages: list) -> None:
    reply = await client.chat.completions.create(model="gpt-4o", messages=messages)
    for call in reply.choices[0].message.tool_calls or []:
        result = await registry.execute(call.function.name, json.loads(call.function.arguments))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": str(result)})
    messages.append({"role": "user", "content": cache.get("today")})
