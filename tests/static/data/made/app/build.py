from langgraph.prebuilt import create_react_agent


def build_agent(llm, tools):
    return create_react_agent(llm, tools=tools)
