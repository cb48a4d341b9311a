"""LangChain 1.x and LangGraph: guard a ``create_agent`` agent, or a LangGraph ``ToolNode``.

Example::

    from langchain.agents import create_agent
    from guardkit.plugins.langchain import GuardMiddleware

    agent = create_agent(model, tools=[search, pay],
                         middleware=[GuardMiddleware(guard.agent("bot"))])
    agent.invoke({"messages": [{"role": "user", "content": "Pay invoice 7"}]})

Every model call requests ``llm_turn`` first; every tool call is requested, waits for a human
if the policy says so, runs, and is reported. Tools already guarded by ``guardkit.tool`` are
handed the call and ask the guard themselves: one action per call. A pending approval waits
in-process, or (``approvals="interrupt"``, with a checkpointer) pauses the graph until it is
decided in the console or the CLI; resume with ``agent.invoke(Command(resume=True), config)``.
``guarded_tool_node(tools, agent)`` is the same tool-call guard for a hand-built LangGraph graph.
"""

from .._adapter import require

require("langchain.agents.middleware", "langchain")
require("langgraph.prebuilt", "langchain")

from ._messages import ApprovalRequest, PendingCall  # noqa: E402
from ._middleware import GuardMiddleware, guarded_tool_node  # noqa: E402

__all__ = ["GuardMiddleware", "guarded_tool_node", "ApprovalRequest", "PendingCall"]
