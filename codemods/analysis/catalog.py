"""The table of things the analysis recognises: model clients, model calls, tool frameworks.

This is data, not code. ``Catalog.extended(...)`` merges the user's additions from
``[tool.guardkit]`` (``model-clients``, ``client-methods``, ``model-functions``,
``tool-decorators``). Names are fully qualified, as written after resolving import aliases.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["DEFAULT_CATALOG", "SERVICE_CLIENTS", "TOOL_DECORATOR_METHODS", "Catalog"]

_OPENAI_METHODS = (
    "chat.completions.create",
    "chat.completions.parse",
    "chat.completions.stream",
    "beta.chat.completions.parse",
    "beta.chat.completions.stream",
    "responses.create",
    "responses.parse",
    "responses.stream",
    "completions.create",
    # the Assistants API: a run is the assistant's model turns on a thread
    "beta.threads.runs.create",
    "beta.threads.runs.create_and_poll",
    "beta.threads.runs.stream",
)
_LANGCHAIN_METHODS = ("invoke", "ainvoke", "stream", "astream", "batch", "abatch", "predict")

#: constructor (or factory) -> kind of model client it returns
CLIENTS: dict[str, str] = {
    "anthropic.Anthropic": "anthropic",
    "anthropic.AsyncAnthropic": "anthropic",
    "anthropic.AnthropicBedrock": "anthropic",
    "anthropic.AsyncAnthropicBedrock": "anthropic",
    "anthropic.AnthropicVertex": "anthropic",
    "anthropic.AsyncAnthropicVertex": "anthropic",
    "anthropic.Client": "anthropic",
    "openai.OpenAI": "openai",
    "openai.AsyncOpenAI": "openai",
    "openai.AzureOpenAI": "openai",
    "openai.AsyncAzureOpenAI": "openai",
    "openai.Client": "openai",
    "openai.AsyncClient": "openai",
    "anthropic.AsyncClient": "anthropic",
    # instructor wraps a client: its chains, and its own ``create_*`` (structured output)
    "instructor.from_openai": "instructor",
    "instructor.patch": "instructor",
    "instructor.apatch": "instructor",
    "instructor.from_anthropic": "instructor",
    "instructor.from_litellm": "instructor",
    "instructor.from_gemini": "instructor",
    "instructor.from_genai": "instructor",
    "instructor.from_mistral": "instructor",
    "instructor.from_provider": "instructor",
    # the legacy Gemini SDK and Vertex AI: a model object, and the chats it starts
    "google.generativeai.GenerativeModel": "gemini",
    "google.generativeai.generative_models.GenerativeModel": "gemini",
    "vertexai.generative_models.GenerativeModel": "gemini",
    "vertexai.preview.generative_models.GenerativeModel": "gemini",
    "cohere.Client": "cohere",
    "cohere.ClientV2": "cohere",
    "cohere.AsyncClient": "cohere",
    "cohere.AsyncClientV2": "cohere",
    "huggingface_hub.InferenceClient": "hf_inference",
    "huggingface_hub.AsyncInferenceClient": "hf_inference",
    # local models
    "llama_cpp.Llama": "llama_cpp",
    "vllm.LLM": "vllm",
    "google.genai.Client": "genai",
    "google.genai.client.Client": "genai",
    "ollama.Client": "ollama",
    "ollama.AsyncClient": "ollama",
    "mistralai.Mistral": "mistral",
    "groq.Groq": "openai",
    "groq.AsyncGroq": "openai",
    # OpenAI-compatible clients (same method chains)
    "portkey_ai.Portkey": "openai",
    "portkey_ai.AsyncPortkey": "openai",
    "together.Together": "openai",
    "together.AsyncTogether": "openai",
    "cerebras.cloud.sdk.Cerebras": "openai",
    "fireworks.client.Fireworks": "openai",
    "openrouter.OpenRouter": "openai",
    "litellm.Router": "litellm_router",
    "langchain.chat_models.init_chat_model": "langchain",
    # the base classes chat models are annotated with (``model: BaseChatModel``)
    "langchain_core.language_models.BaseChatModel": "langchain",
    "langchain_core.language_models.chat_models.BaseChatModel": "langchain",
    "langchain_core.language_models.BaseLanguageModel": "langchain",
    "langchain_core.language_models.base.BaseLanguageModel": "langchain",
    # the base classes LlamaIndex models are annotated with (``llm: BaseLLM``)
    "llama_index.core.llms.LLM": "llama_index",
    "llama_index.core.base.llms.base.BaseLLM": "llama_index",
    "llama_index.core.multi_modal_llms.MultiModalLLM": "llama_index",
    "langgraph.prebuilt.create_react_agent": "agent_run",
    "langchain.agents.create_agent": "agent_run",
    "langchain.agents.AgentExecutor": "agent_run",
    "langchain.agents.create_tool_calling_agent": "agent_run",
    "smolagents.CodeAgent": "agent_run",
    "smolagents.ToolCallingAgent": "agent_run",
    "crewai.Crew": "agent_run",
}

#: kind -> attribute chains that make a model call when called on a client of that kind
METHODS: dict[str, tuple[str, ...]] = {
    "anthropic": (
        "messages.create",
        "messages.stream",
        "beta.messages.create",
        "completions.create",
    ),
    "openai": _OPENAI_METHODS,
    "instructor": tuple(
        f"{chain}{method}"
        for chain in ("", "chat.completions.", "messages.")
        for method in ("create", "create_with_completion", "create_partial", "create_iterable")
    ),
    "genai": (
        "models.generate_content",
        "models.generate_content_stream",
        "aio.models.generate_content",
        "aio.models.generate_content_stream",
    ),
    "genai_chat": ("send_message", "send_message_stream", "send_message_async"),
    "gemini": ("generate_content", "generate_content_async"),
    "cohere": ("chat", "chat_stream", "generate"),
    "hf_inference": ("chat_completion", "chat.completions.create", "text_generation"),
    "llama_cpp": ("create_chat_completion", "create_completion"),
    "vllm": ("generate", "chat"),
    # Amazon Bedrock's runtime client (``boto3.client("bedrock-runtime")``)
    "bedrock": (
        "converse",
        "converse_stream",
        "invoke_model",
        "invoke_model_with_response_stream",
    ),
    "llama_index": (
        "chat",
        "achat",
        "complete",
        "acomplete",
        "stream_chat",
        "astream_chat",
        "stream_complete",
        "astream_complete",
        "predict_and_call",
        "apredict_and_call",
        "chat_with_tools",
        "achat_with_tools",
    ),
    "ollama": ("chat", "generate"),
    "mistral": ("chat.complete", "chat.complete_async", "chat.stream"),
    "langchain": _LANGCHAIN_METHODS,
    "litellm_router": ("completion", "acompletion", "responses", "aresponses"),
    # a framework agent's run: many model turns, gated by the framework integration
    "agent_run": (*_LANGCHAIN_METHODS, "run", "run_sync", "run_stream", "kickoff", "akickoff"),
    "pydantic_ai": ("run", "run_sync", "run_stream"),
}

#: kind -> method chains that return a session of another kind (a chat that remembers turns)
SESSIONS: dict[str, dict[str, str]] = {
    "genai": {"chats.create": "genai_chat", "aio.chats.create": "genai_chat"},
    "gemini": {"start_chat": "genai_chat"},
}

#: methods that return a client of the same kind (``llm.bind_tools(tools)``)
REBINDERS = frozenset(
    {"bind_tools", "bind", "with_structured_output", "with_config", "with_retry", "with_fallbacks"}
)

#: kinds and callables whose call runs a whole multi-turn agent: not one turn, so not gated with
#: ``model_turn()`` but with the framework's integration (a follow-up of ``guardkit fix``)
AGENT_RUN_KINDS = frozenset({"agent_run", "pydantic_ai"})
AGENT_RUNS = frozenset(
    {"agents.Runner.run", "agents.Runner.run_sync", "agents.Runner.run_streamed"}
)

#: plain callables that are model calls
FUNCTIONS = frozenset(
    {
        "litellm.completion",
        "litellm.acompletion",
        "litellm.responses",
        "litellm.aresponses",
        "ollama.chat",
        "ollama.generate",
        "litellm.text_completion",
        "litellm.atext_completion",
        "openai.chat.completions.create",
        "openai.responses.create",
        # the pre-1.0 module API
        "openai.ChatCompletion.create",
        "openai.ChatCompletion.acreate",
        "openai.Completion.create",
        "openai.Completion.acreate",
        "agents.Runner.run",
        "agents.Runner.run_sync",
        "agents.Runner.run_streamed",
    }
)

#: module prefixes whose ``Chat*`` classes are LangChain chat models
LANGCHAIN_PREFIXES = ("langchain_", "langchain.chat_models", "langchain_community.chat_models")
#: module prefix of LlamaIndex's model integrations (``llama_index.llms.openai.OpenAI``)
LLAMA_INDEX_LLMS = "llama_index.llms."
#: ``boto3.client(service)`` (or a session's ``client``): service -> kind of the client
SERVICE_CLIENTS: dict[str, str] = {"bedrock-runtime": "bedrock"}

#: decorators (called or bare) that expose a function to a model as a tool
TOOL_DECORATORS = frozenset(
    {
        "langchain_core.tools.tool",
        "langchain.tools.tool",
        "langchain.agents.tool",
        "langchain_core.tools.convert.tool",
        "crewai.tools.tool",
        "crewai_tools.tool",
        "smolagents.tool",
        "agents.function_tool",
        "agents.tool.function_tool",
        "agents.decorators.tool",
        "fastmcp.tools.tool",
        "llama_index.core.tools.tool",
        "strands.tool",
        "strands.tools.tool",
        "strands.tools.decorator.tool",
        "agno.tools.tool",
        "agno.tools.decorator.tool",
        "haystack.tools.tool",
        "semantic_kernel.functions.kernel_function",
        "semantic_kernel.functions.kernel_function_decorator.kernel_function",
    }
)

#: methods that, on any object, make a decorator exposing a function to a model as a tool
#: (AutoGen/AG2: ``@assistant.register_for_llm(description=...)``, also applied by hand)
TOOL_DECORATOR_METHODS = frozenset({"register_for_llm"})

#: plugin hooks that hand tools over: hook decorator -> hook function name; its first
#: parameter registers a tool (``@llm.hookimpl def register_tools(register): register(fn)``)
TOOL_HOOKS: dict[str, str] = {"llm.hookimpl": "register_tools"}

#: instance kinds whose ``.tool`` attribute is a tool decorator
TOOL_SERVER_CLIENTS: dict[str, str] = {
    "mcp.server.fastmcp.FastMCP": "fastmcp",
    "mcp.server.FastMCP": "fastmcp",
    "mcp.server.MCPServer": "fastmcp",
    "mcp.server.mcpserver.MCPServer": "fastmcp",
    "fastmcp.FastMCP": "fastmcp",
    "fastmcp.server.FastMCP": "fastmcp",
    "mcp.server.Server": "mcp_lowlevel",
    "mcp.server.lowlevel.Server": "mcp_lowlevel",
    "pydantic_ai.Agent": "pydantic_ai",
    "pydantic_ai.FunctionToolset": "pydantic_ai",
    "pydantic_ai.toolsets.FunctionToolset": "pydantic_ai",
}

#: ``Tool(func=...)`` style constructors -> the position of the callable they make a tool of,
#: when it may be given positionally (``FunctionTool.from_defaults(fn)``, ``Tool(name, func)``);
#: by keyword it is any of :data:`TOOL_CALLABLE_KEYWORDS`
TOOL_CONSTRUCTORS: dict[str, int | None] = {
    "langchain.tools.Tool": 1,
    "langchain_core.tools.Tool": 1,
    "langchain.agents.Tool": 1,
    "langchain_core.tools.StructuredTool.from_function": 0,
    "langchain.tools.StructuredTool.from_function": 0,
    "langchain_core.tools.StructuredTool": None,
    "llama_index.core.tools.FunctionTool.from_defaults": 0,
    "llama_index.core.tools.FunctionTool": None,
    "agents.FunctionTool": None,
    "pydantic_ai.Tool": 0,
    "pydantic_ai.tools.Tool": 0,
    "google.adk.tools.FunctionTool": 0,
    "google.adk.tools.LongRunningFunctionTool": 0,
    "haystack.tools.Tool": None,
    "haystack.tools.create_tool_from_function": 0,
    "autogen_core.tools.FunctionTool": 0,
    "dspy.Tool": 0,
    "camel.toolkits.FunctionTool": 0,
}
#: keywords of a tool constructor that name the callable (sync or async) it runs
TOOL_CALLABLE_KEYWORDS = frozenset(
    {"func", "fn", "async_fn", "coroutine", "function", "on_invoke_tool"}
)

#: base classes whose subclasses are tools, with the method the framework calls
TOOL_BASES: dict[str, tuple[str, ...]] = {
    "smolagents.Tool": ("forward",),
    "langchain_core.tools.BaseTool": ("_run", "_arun"),
    "langchain.tools.BaseTool": ("_run", "_arun"),
    "crewai.tools.BaseTool": ("_run",),
    "crewai_tools.BaseTool": ("_run",),
    "agency_swarm.tools.BaseTool": ("run",),
    "agency_swarm.BaseTool": ("run",),
    "google.adk.tools.BaseTool": ("run_async",),
    "google.adk.tools.base_tool.BaseTool": ("run_async",),
    "autogen_core.tools.BaseTool": ("run",),
    "llama_index.core.tools.BaseTool": ("__call__", "call", "acall"),
    "llama_index.core.tools.AsyncBaseTool": ("call", "acall"),
}

#: bases whose subclasses list their tool methods by name in ``spec_functions``
#: (LlamaIndex tool specs: ``spec_functions = ["get_price", ("buy", "abuy")]``)
TOOL_SPEC_BASES = frozenset(
    {
        "llama_index.core.tools.tool_spec.base.BaseToolSpec",
        "llama_index.core.tools.BaseToolSpec",
    }
)

#: frameworks that take a whole module as a tool: the module-level spec that names the
#: module's function the framework runs (Strands: ``TOOL_SPEC = {"name": "shell", ...}`` and
#: ``def shell(tool, **kwargs)``, the module handed over in ``tools=[shell_module]``)
MODULE_TOOL_SPECS: dict[str, str] = {"strands": "TOOL_SPEC"}

#: tool decorators and bases whose framework reads the tool's source (smolagents validates it,
#: and serialises tools by their code): a guard decorator there breaks the framework
SOURCE_CHECKED = frozenset({"smolagents.tool", "smolagents.tools.tool", "smolagents.Tool"})
#: calls that read a function's source: tools in a module that makes them are not decorated
#: (a registry that stores and runs their source would miss ``guardkit``); ``exec`` of other
#: text (the model's code, run with the tools in its namespace) reads no function's source
SOURCE_READERS = frozenset({"inspect.getsource", "inspect.getsourcelines", "dill.source.getsource"})

#: HTTP calls that send a request body, and the URL fragments of model endpoints they may post to
HTTP_POSTS = frozenset(
    {
        "requests.post",
        "requests.request",
        "httpx.post",
        "httpx.request",
        "urllib.request.urlopen",
    }
)
HTTP_CLIENTS: dict[str, str] = {
    "requests.Session": "http",
    "requests.session": "http",
    "httpx.Client": "http",
    "httpx.AsyncClient": "http",
    "aiohttp.ClientSession": "http",
}
MODEL_ENDPOINTS = (
    "/chat/completions",
    "/v1/completions",
    "/v1/messages",
    "/v1/responses",
    "/api/chat",
    "/api/generate",
    ":generateContent",
    ":streamGenerateContent",
)

#: guardkit's own gates (names the lead may adjust): calls or objects that, passed to an agent,
#: server or run, gate its model turns and tool calls
GATES = frozenset(
    {
        "guardkit.plugins.langchain.GuardMiddleware",
        "guardkit.plugins.langchain.guarded_tool_node",
        "guardkit.plugins.pydantic_ai.GuardCapability",
        "guardkit.plugins.pydantic_ai.GuardedToolset",
        "guardkit.plugins.pydantic_ai.GuardedModel",
        "guardkit.plugins.openai_agents.GuardHooks",
        "guardkit.plugins.openai_agents.guard_tools",
        "guardkit.plugins.mcp.GuardMiddleware",
        "guardkit.plugins.mcp.guard_server",
        "guardkit.plugins.smolagents.guard",
        "guardkit.plugins.llama_index.guard",
        "guardkit.plugins.llama_index.guard_tools",
        "guardkit.plugins.google_adk.guard",
        "guardkit.plugins.google_adk.GuardPlugin",
        "guardkit.plugins.crewai.guard",
    }
)
#: names a project's logger or console goes by: a call on one shows a value, it acts on nothing
LOGGER_NAMES = frozenset(
    {"log", "logger", "logging", "_log", "_logger", "console", "stdout", "stderr"}
)

#: context managers and functions that gate one model turn
TURN_GATES = frozenset({"guardkit.model_turn", "guardkit.llm_turn", "guardkit.gate_turn"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Catalog:
    """Everything the analysis treats as a model client, model call or tool framework."""

    clients: Mapping[str, str] = field(default_factory=lambda: dict(CLIENTS))
    methods: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(METHODS))
    functions: frozenset[str] = FUNCTIONS
    tool_decorators: frozenset[str] = TOOL_DECORATORS
    gates: frozenset[str] = GATES
    #: last components of the model functions and method chains (``create``, ``completion``):
    #: a name that ends otherwise is no model function, the analysis's cheap first test
    tails: frozenset[str] = field(init=False, repr=False, compare=False)
    #: last components of the tool decorators' names (``tool``, ``function_tool``)
    tool_decorator_words: frozenset[str] = field(init=False, repr=False, compare=False)
    #: every qualified name in the catalog
    known: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        chains = [c for kind in self.methods.values() for c in kind]
        tails = frozenset(n.rpartition(".")[2] for n in [*self.functions, *chains])
        object.__setattr__(self, "tails", tails)
        words = frozenset(n.rpartition(".")[2] for n in self.tool_decorators)
        object.__setattr__(self, "tool_decorator_words", words)
        names = [*self.clients, *self.functions, *self.tool_decorators]
        names += [*TOOL_SERVER_CLIENTS, *TOOL_CONSTRUCTORS, *TOOL_BASES, *TOOL_HOOKS]
        object.__setattr__(self, "known", frozenset([*names, *TOOL_SPEC_BASES]))

    def extended(
        self,
        *,
        clients: Mapping[str, str] | None = None,
        methods: Mapping[str, Iterable[str]] | None = None,
        functions: Iterable[str] = (),
        tool_decorators: Iterable[str] = (),
        gates: Iterable[str] = (),
    ) -> Catalog:
        """Return a catalog with the user's entries added to the built-in ones."""
        merged = {k: tuple(v) for k, v in self.methods.items()}
        for kind, chains in (methods or {}).items():
            merged[kind] = (*merged.get(kind, ()), *chains)
        return Catalog(
            clients={**self.clients, **(clients or {})},
            methods=merged,
            functions=self.functions | frozenset(functions),
            tool_decorators=self.tool_decorators | frozenset(tool_decorators),
            gates=self.gates | frozenset(gates),
        )

    def client_kind(self, qualname: str) -> str | None:
        """The kind of client a call to ``qualname`` returns, if it is a known constructor."""
        if qualname in self.clients:
            return self.clients[qualname]
        last = qualname.rpartition(".")[2]
        if last.startswith("Chat") and qualname.startswith(LANGCHAIN_PREFIXES):
            return "langchain"
        if last[:1].isupper() and qualname.startswith(LLAMA_INDEX_LLMS):
            return "llama_index"
        return None

    def names(self) -> frozenset[str]:
        """Every qualified name in the catalog."""
        return self.known

    def top_modules(self) -> frozenset[str]:
        """First components of every name in the catalog, for the textual prefilter."""
        tops = {n.split(".")[0] for n in self.names()}
        # AG2/AutoGen hand tools over by keyword and ``register_function`` (see ``handed``)
        # LlamaIndex's models by prefix; Bedrock's client by the service ``boto3`` is asked for
        return frozenset(tops) | {"langchain_openai", "guardkit", "autogen", "llama_index", "boto3"}


DEFAULT_CATALOG = Catalog()
