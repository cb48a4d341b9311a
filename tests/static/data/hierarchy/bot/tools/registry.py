from bot.tools.base import Tool


class Registry:
    def __init__(self):
        self._tools: dict[str, Tool] = {}

    def register(self, tool):
        self._tools[tool.name] = tool

    def definitions(self):
        return [tool.to_schema() for tool in self._tools.values()]

    async def run(self, name, params):
        tool = self._tools.get(name)
        if tool is None:
            return f"no tool {name}"
        errors = tool.check(params)
        if errors:
            return "; ".join(errors)
        return await tool.execute(**params)
