import asyncio

from agents import Agent, Runner

agent = Agent(name="echo", instructions="Repeat the user.")


async def serve() -> None:
    while True:
        line = await asyncio.to_thread(input, "you> ")
        result = await Runner.run(agent, line)
        print(result.final_output)
