import asyncio

from crew.tools import Tool


class Executor:
    def __init__(self, tools: list[Tool]):
        self._tools = tools
        self._tool_map: dict[str, Tool] | None = None

    def _key(self, name: str) -> str:
        """Lower case, without underscores."""
        return name.lower().replace("_", "")

    @property
    def tools(self) -> dict[str, Tool]:
        if self._tool_map is None:
            self._tool_map = {self._key(tool.name): tool for tool in self._tools}
        return self._tool_map

    def schemas(self):
        return [tool.schema() for tool in self._tools]

    async def run_one(self, call):
        key = self._key(call.name)
        if key not in self.tools:
            return f"unknown tool {call.name}"
        tool = self.tools[key]
        return await tool.execute(call.arguments)

    async def run_all(self, calls):
        return await asyncio.gather(*[self.run_one(call) for call in calls])


class Report:
    def __init__(self, sections):
        self.sections = sections

    def render(self, field):
        # a key respelled from a configuration field's label: no tool name, no dispatch
        key = self._key(field.label)
        return self.sections[key].format(field.rows)

    def _key(self, text):
        return text.strip().lower()
