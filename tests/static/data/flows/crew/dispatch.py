from typing import Any


async def run_one(registry: Any, picked: Any, payload: Any) -> Any:
    tool = registry[picked]
    return await tool.execute(**payload)
