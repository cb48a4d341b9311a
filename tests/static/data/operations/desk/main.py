import asyncio

from desk.model import next_operations
from desk.screen import Screen

screen = Screen()


async def ask(messages):
    return next_operations(messages)


def perform(operations):
    for operation in operations:
        kind = operation.get("operation").lower()
        if kind == "write" or kind == "type":
            screen.type_text(operation["content"])
        elif kind == "click":
            where = {"x": operation.get("x"), "y": operation.get("y")}
            screen.click(where)
        elif kind == "done":
            return True
    return False


def main(goal):
    messages = [{"role": "user", "content": goal}]
    for _ in range(10):
        operations = asyncio.run(ask(messages))
        if perform(operations):
            break
