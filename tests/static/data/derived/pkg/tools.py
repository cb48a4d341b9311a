from pkg.base import ProjectTool


class Search(ProjectTool):
    name: str = "search"
    description: str = "Search the notes"

    def _run(self, query: str) -> str:
        return query


class Notes:
    """No tool: it derives from nothing of a framework's."""

    def _run(self, text: str) -> str:
        return text
