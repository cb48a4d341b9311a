from typing import Any


class Tool:
    name: str = ""
    description: str = ""
    parameters: dict[str, Any] = {}

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}

    async def execute(self, **kwargs: Any) -> str:
        raise NotImplementedError
