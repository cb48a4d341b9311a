from llama_index.core.tools.tool_spec.base import BaseToolSpec


class StockSpec(BaseToolSpec):
    spec_functions = ["get_price", ("buy", "abuy")]

    def get_price(self, ticker: str) -> float:
        return 1.0

    def buy(self, ticker: str, quantity: int) -> str:
        return f"bought {quantity} {ticker}"

    async def abuy(self, ticker: str, quantity: int) -> str:
        return self.buy(ticker, quantity)

    def currency(self) -> str:
        return "EUR"
