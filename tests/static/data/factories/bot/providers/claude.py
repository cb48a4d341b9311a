import anthropic

from .base import Provider


class ClaudeProvider(Provider):
    def __init__(self, cfg):
        self._client = anthropic.AsyncAnthropic()
        self.cfg = cfg

    async def complete(self, messages, tools):
        return await self._client.messages.create(
            model=self.cfg["model"], max_tokens=4096, messages=messages, tools=tools
        )
