"""LangChain tools bound to a chat model, with a hand-written loop."""

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@tool("web_search", return_direct=False)
def search(query: str) -> str:
    """Search the web."""
    return f"results for {query}"


TOOLS = [multiply, search]
llm = ChatOpenAI(model="gpt-4o-mini", temperature=0).bind_tools(TOOLS)


def answer(question: str, max_steps: int = 5) -> str:
    messages = [HumanMessage(question)]
    for _ in range(max_steps):
        ai = llm.invoke(messages)
        messages.append(ai)
        if not ai.tool_calls:
            return ai.content
        for call in ai.tool_calls:
            chosen = {"multiply": multiply, "web_search": search}[call["name"]]
            messages.append(ToolMessage(chosen.invoke(call["args"]), tool_call_id=call["id"]))
    return "gave up"
