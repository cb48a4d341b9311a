import asyncio

from .providers import get_provider
from .toolbox import Fetch, Sleep, Toolbox


class Session:
    def __init__(self, cfg):
        self.provider = get_provider(cfg["provider"], cfg)
        self.toolbox = Toolbox([Fetch(), Sleep()])
        self.history = []

    async def _turn(self):
        reply = await self.provider.complete(self.history, self.toolbox.schemas())
        self.history.append({"role": "assistant", "content": reply.content})
        uses = [b for b in reply.content if b.type == "tool_use"]
        if not uses:
            return None
        results = await asyncio.gather(*(self.toolbox.invoke(u.name, u.input) for u in uses))
        self.history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": u.id, "content": r} for u, r in zip(uses, results)
        ]})
        return results

    async def run(self, prompt):
        self.history.append({"role": "user", "content": prompt})
        while True:
            if await self._turn() is None:
                break
        return self.history
