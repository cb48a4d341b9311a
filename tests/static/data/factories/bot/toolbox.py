import asyncio
import httpx


class Tool:
    name = ""
    description = ""

    def schema(self):
        return {"name": self.name, "description": self.description, "input_schema": {"type": "object"}}

    async def __call__(self, **kwargs):
        raise NotImplementedError


class Fetch(Tool):
    name = "fetch"
    description = "fetch a url"

    async def __call__(self, url: str):
        async with httpx.AsyncClient() as c:
            return (await c.get(url)).text


class Sleep(Tool):
    name = "sleep"

    async def __call__(self, seconds: float):
        await asyncio.sleep(seconds)
        return "ok"


class Toolbox:
    def __init__(self, tools):
        self._by_name = {t.name: t for t in tools}

    def schemas(self):
        return [t.schema() for t in self._by_name.values()]

    async def invoke(self, name, payload):
        tool = self._by_name.get(name)
        if tool is None:
            return f"unknown tool {name}"
        return await tool(**payload)
