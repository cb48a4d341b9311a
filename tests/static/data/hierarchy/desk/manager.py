from desk.tools import LLMTool


class Manager:
    def __init__(self, tools):
        self.tools = tools

    def get_tool(self, tool_name: str) -> LLMTool:
        return next(t for t in self.tools if t.name == tool_name)

    async def run_tool(self, name, tool_input):
        tool = self.get_tool(name)
        return await tool.run_async(tool_input)
