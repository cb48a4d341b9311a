from pathlib import Path

from .base import Tool


class SaveNoteTool(Tool):
    name = "save_note"
    description = "Save a note"

    async def execute(self, name: str = "", body: str = "", **kwargs: object) -> str:
        target = Path("notes") / f"{name}.md"
        Path(name).with_suffix(".md").write_text(body)
        with open(name, "a") as handle:
            handle.write(body)
        return str(target)
