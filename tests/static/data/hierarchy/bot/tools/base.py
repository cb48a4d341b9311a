from abc import ABC, abstractmethod


class Tool(ABC):
    name = ""

    @abstractmethod
    async def execute(self, **kwargs):
        raise NotImplementedError

    def check(self, params):
        return [] if isinstance(params, dict) else ["not an object"]

    def to_schema(self):
        return {"type": "function", "function": {"name": self.name}}
