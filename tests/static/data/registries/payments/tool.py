from langchain_core.tools import BaseTool

from .api import Api


class PaymentsTool(BaseTool):
    api: Api
    method: str

    def _run(self, **kwargs: object) -> str:
        return self.api.run(self.method, **kwargs)
