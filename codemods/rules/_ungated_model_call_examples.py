"""The examples of UngatedModelCall: flagged and accepted code, and the fixed form of what
`guardkit fix` fixes (checked by tests/static/test_rules.py, shown in docs/rules.md)."""

from __future__ import annotations

from .base import Invalid, Valid

__all__ = ["INVALID", "USE_INSTEAD", "VALID"]

USE_INSTEAD = """
    import anthropic
    import guardkit
    client = anthropic.Anthropic()
    def ask(prompt):
        with guardkit.model_turn():
            return client.messages.create(model="m", messages=[prompt])
    """

VALID: tuple[Valid, ...] = (
    Valid(
        code="""
        import guardkit
        import anthropic
        client = anthropic.Anthropic()
        def ask(guard, prompt):
            turn = guard.request("llm_turn", {})
            if turn["decision"] != "allowed":
                raise guardkit.ActionDenied(turn["action_id"], turn["reason"])
            return client.messages.create(model="m", messages=[prompt])
        """
    ),
    Valid(
        code="""
        class Session:
            def create(self): ...
        s = Session()
        s.messages.create(model="m")
        """,
        note="method name alone is not a model call",
    ),
    Valid(
        code="""
        import requests
        requests.post("https://example.com/v1/orders", json={})
        """,
        note="an HTTP post to something that is not a model endpoint",
    ),
    Valid(
        code="""
        import guardkit
        from agents import Runner
        async def main(agent):
            turn = guardkit.current_agent().request("llm_turn", {})
            if turn["decision"] == "allowed":
                await Runner.run(agent, "hi", max_turns=5)
        """
    ),
    Valid(
        code="""
        from openai import OpenAI
        client = OpenAI()
        models = client.models.list()
        """,
        note="not every client method calls a model",
    ),
    Valid(
        code="""
        import anthropic
        import guardkit
        client = anthropic.AsyncAnthropic()
        async def ask(prompt):
            async with guardkit.model_turn():
                return await client.messages.create(model="m", messages=[prompt])
        """,
        note="async with guardkit.model_turn()",
    ),
    Valid(
        code="""
        from langchain.agents import create_agent
        from guardkit.plugins.langchain import GuardMiddleware
        agent = create_agent("openai:gpt-4o", tools=[], middleware=[GuardMiddleware()])
        def ask(question):
            return agent.invoke({"messages": [question]})
        """,
        note="an agent built with guardkit's LangChain middleware",
    ),
    Valid(
        code="""
        from agents import Runner
        from guardkit.plugins.openai_agents import GuardHooks
        async def main(agent):
            return await Runner.run(agent, "hi", hooks=GuardHooks())
        """,
        note="a run with guardkit's Agents SDK hooks",
    ),
)

INVALID: tuple[Invalid, ...] = (
    Invalid(
        code="""
        import anthropic
        client = anthropic.Anthropic()
        def ask(prompt):
            return client.messages.create(model="m", messages=[prompt])
        """,
        line=4,
        column=11,
        expected_fix="""
            import anthropic
            import guardkit

            client = anthropic.Anthropic()
            def ask(prompt):
                with guardkit.model_turn():
                    return client.messages.create(model="m", messages=[prompt])
            """,
    ),
    Invalid(
        code="""
        import litellm as ll
        for _ in range(3):
            ll.completion(model="gpt-4o", messages=[])
        """,
        line=3,
        column=4,
        note="bounded loops are included",
        expected_fix="""
            import litellm as ll
            import guardkit

            for _ in range(3):
                with guardkit.model_turn():
                    ll.completion(model="gpt-4o", messages=[])
            """,
    ),
    Invalid(
        code="""
        from google import genai
        client = genai.Client()
        resp = client.models.generate_content(model="gemini-2.0-flash", contents="hi")
        """,
        line=3,
        column=7,
        expected_fix="""
            from google import genai
            import guardkit

            client = genai.Client()
            with guardkit.model_turn():
                resp = client.models.generate_content(model="gemini-2.0-flash", contents="hi")
            """,
    ),
    Invalid(
        code="""
        from agents import Agent, Runner
        agent = Agent(name="a")
        result = Runner.run_sync(agent, "hello")
        """,
        line=3,
        column=9,
    ),
    Invalid(
        code="""
        import ollama
        reply = ollama.chat(model="llama3", messages=[])
        """,
        line=2,
        column=8,
        expected_fix="""
            import ollama
            import guardkit

            with guardkit.model_turn():
                reply = ollama.chat(model="llama3", messages=[])
            """,
    ),
    Invalid(
        code="""
        from langchain.chat_models import init_chat_model
        model = init_chat_model("claude-sonnet-4")
        chain = prompt | model
        chain.invoke({"q": "hi"})
        """,
        line=4,
        column=0,
        note="a LangChain runnable built with |",
        expected_fix="""
            from langchain.chat_models import init_chat_model
            import guardkit

            model = init_chat_model("claude-sonnet-4")
            chain = prompt | model
            with guardkit.model_turn():
                chain.invoke({"q": "hi"})
            """,
    ),
    Invalid(
        code="""
        import openai
        def make():
            return openai.AzureOpenAI(api_version="2024-06-01")
        client = make()
        client.chat.completions.create(model="m", messages=[])
        """,
        line=5,
        column=0,
        note="a client from a local factory",
        expected_fix="""
            import openai
            import guardkit

            def make():
                return openai.AzureOpenAI(api_version="2024-06-01")
            client = make()
            with guardkit.model_turn():
                client.chat.completions.create(model="m", messages=[])
            """,
    ),
    Invalid(
        code="""
        import guardkit
        import anthropic
        client = anthropic.Anthropic()
        def ask(guard):
            guard.request("llm_turn", {})
            client.messages.create(model="m", messages=[])
            client.messages.create(model="m", messages=[])
        """,
        line=7,
        column=4,
        note="one gate covers one call",
        expected_fix="""
            import guardkit
            import anthropic
            client = anthropic.Anthropic()
            def ask(guard):
                guard.request("llm_turn", {})
                client.messages.create(model="m", messages=[])
                with guardkit.model_turn():
                    client.messages.create(model="m", messages=[])
            """,
    ),
    Invalid(
        code="""
        from openai import OpenAI
        with OpenAI() as client:
            client.chat.completions.create(model="m", messages=[])
        """,
        line=3,
        column=4,
        note="a client bound by with",
        expected_fix="""
            from openai import OpenAI
            import guardkit

            with OpenAI() as client:
                with guardkit.model_turn():
                    client.chat.completions.create(model="m", messages=[])
            """,
    ),
    Invalid(
        code="""
        from langchain_anthropic import ChatAnthropic
        class Agent:
            llm: ChatAnthropic
            async def step(self, messages):
                return await self.llm.ainvoke(messages)
        """,
        line=5,
        column=21,
        note="a class-level annotation",
        expected_fix="""
            from langchain_anthropic import ChatAnthropic
            import guardkit

            class Agent:
                llm: ChatAnthropic
                async def step(self, messages):
                    async with guardkit.model_turn():
                        return await self.llm.ainvoke(messages)
            """,
    ),
    Invalid(
        code="""
        import openai
        def ask(prompt):
            return openai.ChatCompletion.create(model="gpt-3.5", messages=[prompt])
        """,
        line=3,
        column=11,
        note="the pre-1.0 openai module API",
        expected_fix="""
            import openai
            import guardkit

            def ask(prompt):
                with guardkit.model_turn():
                    return openai.ChatCompletion.create(model="gpt-3.5", messages=[prompt])
            """,
    ),
    Invalid(
        code="""
        from portkey_ai import Portkey
        client = Portkey(api_key="k", virtual_key="v")
        def ask(prompt):
            return client.chat.completions.create(model="m", messages=[prompt])
        """,
        line=4,
        column=11,
        note="an OpenAI-compatible client (Portkey)",
        expected_fix="""
            from portkey_ai import Portkey
            import guardkit

            client = Portkey(api_key="k", virtual_key="v")
            def ask(prompt):
                with guardkit.model_turn():
                    return client.chat.completions.create(model="m", messages=[prompt])
            """,
    ),
    Invalid(
        code="""
        import httpx
        def ask(prompt: str) -> dict:
            with httpx.Client() as http:
                reply = http.post("https://api.anthropic.com/v1/messages", json=prompt)
            return reply.json()
        """,
        line=4,
        column=16,
        note="raw HTTP to a messages endpoint",
        expected_fix="""
            import httpx
            import guardkit

            def ask(prompt: str) -> dict:
                with httpx.Client() as http:
                    with guardkit.model_turn():
                        reply = http.post("https://api.anthropic.com/v1/messages", json=prompt)
                return reply.json()
            """,
    ),
    Invalid(
        code="""
        import httpx
        class Chat:
            api_url: str = "https://api.openai.com/v1/chat/completions"
            def stream(self, prompt: str, http: httpx.Client) -> list[str]:
                with http.stream("POST", str(self.api_url)) as reply:
                    return list(reply.iter_lines())
        """,
        line=5,
        column=13,
        note="raw HTTP stream to the URL a class field holds",
        expected_fix="""
            import httpx
            import guardkit

            class Chat:
                api_url: str = "https://api.openai.com/v1/chat/completions"
                def stream(self, prompt: str, http: httpx.Client) -> list[str]:
                    with guardkit.model_turn(), http.stream("POST", str(self.api_url)) as reply:
                        return list(reply.iter_lines())
            """,
    ),
    Invalid(
        code="""
        from openai import OpenAI
        class Handler:
            def __init__(self, llm):
                self.llm = llm
            def ask(self, prompt):
                return self.llm.chat.completions.create(model="m", messages=prompt)
        handler = Handler(OpenAI())
        """,
        line=6,
        column=15,
        note="a client handed to the constructor of a class of the module",
        expected_fix="""
            from openai import OpenAI
            import guardkit

            class Handler:
                def __init__(self, llm):
                    self.llm = llm
                def ask(self, prompt):
                    with guardkit.model_turn():
                        return self.llm.chat.completions.create(model="m", messages=prompt)
            handler = Handler(OpenAI())
            """,
    ),
    Invalid(
        code="""
        import requests
        def chat(messages):
            request = {"url": "http://localhost:11434/api/chat", "json": {"messages": messages}}
            return requests.post(**request).json()
        """,
        line=4,
        column=11,
        note="raw HTTP whose URL travels in the keyword arguments it is given",
        expected_fix="""
            import requests
            import guardkit

            def chat(messages):
                request = {"url": "http://localhost:11434/api/chat", "json": {"messages": messages}}
                with guardkit.model_turn():
                    return requests.post(**request).json()
            """,
    ),
    Invalid(
        code="""
        from langchain_openai import ChatOpenAI
        class Models:
            _chat = None
            @classmethod
            def chat(cls):
                if cls._chat is None:
                    cls._chat = ChatOpenAI(model="m")
                return cls._chat
        models = Models()
        def polish(draft):
            return models.chat().invoke(draft).content
        """,
        line=11,
        column=11,
        note="a client a method of a class of the module returns, called on an instance",
        expected_fix="""
            from langchain_openai import ChatOpenAI
            import guardkit

            class Models:
                _chat = None
                @classmethod
                def chat(cls):
                    if cls._chat is None:
                        cls._chat = ChatOpenAI(model="m")
                    return cls._chat
            models = Models()
            def polish(draft):
                with guardkit.model_turn():
                    return models.chat().invoke(draft).content
            """,
    ),
    Invalid(
        code="""
        import litellm
        completion = litellm.completion
        def ask(prompt):
            return completion(model="m", messages=[prompt])
        """,
        line=4,
        column=11,
        note="the model function held in a module-level variable",
        expected_fix="""
            import litellm
            import guardkit

            completion = litellm.completion
            def ask(prompt):
                with guardkit.model_turn():
                    return completion(model="m", messages=[prompt])
            """,
    ),
    Invalid(
        code="""
        import openai
        class Base:
            def client(self):
                return openai.OpenAI()
        class Chat(Base):
            def ask(self, prompt):
                client = self.client()
                return client.chat.completions.create(model="m", messages=[prompt])
        """,
        line=8,
        column=15,
        note="a client built by a method the class inherits",
        expected_fix="""
            import openai
            import guardkit

            class Base:
                def client(self):
                    return openai.OpenAI()
            class Chat(Base):
                def ask(self, prompt):
                    client = self.client()
                    with guardkit.model_turn():
                        return client.chat.completions.create(model="m", messages=[prompt])
            """,
    ),
    Invalid(
        code="""
        import openai
        class Backend:
            def send(self, prompt):
                raise NotImplementedError
        class OpenAIBackend(Backend):
            def __init__(self):
                self.client = openai.OpenAI()
            def send(self, prompt):
                return self.client.responses.create(model="m", input=prompt)
        def ask(backend: object, prompt):
            if isinstance(backend, OpenAIBackend):
                return backend.client.responses.create(model="m", input=prompt)
            return None
        """,
        line=12,
        column=15,
        note="a value narrowed by isinstance",
        expected_fix="""
            import openai
            import guardkit

            class Backend:
                def send(self, prompt):
                    raise NotImplementedError
            class OpenAIBackend(Backend):
                def __init__(self):
                    self.client = openai.OpenAI()
                def send(self, prompt):
                    with guardkit.model_turn():
                        return self.client.responses.create(model="m", input=prompt)
            def ask(backend: object, prompt):
                if isinstance(backend, OpenAIBackend):
                    with guardkit.model_turn():
                        return backend.client.responses.create(model="m", input=prompt)
                return None
            """,
    ),
)
