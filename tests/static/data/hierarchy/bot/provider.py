import litellm


class Provider:
    async def chat(self, messages, tools):
        return await litellm.acompletion(model="gpt-4o", messages=messages, tools=tools)
