from langchain_core.tools import BaseTool


class ProjectTool(BaseTool):
    """The project's own base: every tool of the project derives from it."""

    def describe(self) -> str:
        return f"{self.name}: {self.description}"
