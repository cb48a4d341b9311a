from agents import Agent, Runner, function_tool


@function_tool
def word_count(text: str) -> int:
    return len(text.split())


agent = Agent(name="helper", instructions="Be brief.", tools=[word_count])


def chat() -> None:
    while True:
        line = read_line()
        if line == "quit":
            break
        result = Runner.run_sync(agent, line)
        print(result.final_output)


def read_line() -> str:
    return input("> ").strip()
