"""OpenAI Agents SDK: function tools and Runner."""

import asyncio

from agents import Agent, Runner, function_tool


@function_tool
def refund(order_id: str, amount: float) -> str:
    """Refund an order."""
    return f"refunded {amount} on {order_id}"


support = Agent(name="support", instructions="Help the customer.", tools=[refund])


async def main() -> None:
    result = await Runner.run(support, "Refund order 42", max_turns=8)
    print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main())
