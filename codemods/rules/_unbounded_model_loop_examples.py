"""The examples of UnboundedModelLoop: flagged and accepted code, and the fixed form of what
`guardkit fix` fixes (checked by tests/static/test_rules.py, shown in docs/rules.md)."""

from __future__ import annotations

from .base import Invalid, Valid

__all__ = ["INVALID", "USE_INSTEAD", "VALID"]

USE_INSTEAD = """
    import anthropic
    client = anthropic.Anthropic()
    def run(messages, max_turns: int = 25):
        for _ in range(max_turns):
            reply = client.messages.create(model="m", messages=messages)
            if reply.stop_reason != "tool_use":
                return reply
        raise RuntimeError("turn limit reached")
    """

VALID: tuple[Valid, ...] = (
    Valid(
        code="""
        from google import genai
        client = genai.Client()
        chat = client.chats.create(model="gemini-2.0-flash")
        while True:
            print(chat.send_message(input("> ")).text)
        """,
        note="a chat REPL: every turn waits for a person",
    ),
    Valid(
        code="""
        import anthropic
        client = anthropic.Anthropic()
        for _ in range(10):
            client.messages.create(model="m", messages=[])
        """,
        note="for over range()",
    ),
    Valid(
        code="""
        from openai import OpenAI
        client = OpenAI()
        turns = 0
        while True:
            turns += 1
            if turns > 8:
                break
            client.chat.completions.create(model="m", messages=[])
        """,
        note="a counter compared against a limit",
    ),
    Valid(
        code="""
        from openai import OpenAI
        client = OpenAI()
        def click(elements, messages):
            clicked = None
            failures = 0
            while True:
                reply = client.chat.completions.create(model="m", messages=messages)
                try:
                    elements[int(reply.choices[0].message.content)].click()
                    clicked = f"clicked {reply.id}"
                except (ValueError, IndexError):
                    if failures > 3:
                        break
                    failures += 1
                if clicked:
                    break
            return clicked
        """,
        note="a success flag set to a truthy value ends the turn; every other turn steps the "
        "counter",
    ),
    Valid(
        code="""
        from openai import OpenAI
        client = OpenAI()
        def fix(messages):
            done = False
            tries = 0
            while not done and tries < 3:
                reply = client.chat.completions.create(model="m", messages=messages)
                if reply.choices[0].message.content == "OK":
                    done = True
                else:
                    tries += 1
        """,
        note="a flag that ends the while on one path, the counter on the other",
    ),
    Valid(
        code="""
        from openai import OpenAI
        client = OpenAI()
        def collect(max_ideas):
            ideas = []
            while len(ideas) < max_ideas:
                reply = client.chat.completions.create(model="m", messages=[])
                ideas.append(reply.choices[0].message.content)
            return ideas
        """,
        note="a length the loop grows, compared against a limit",
    ),
    Valid(
        code="""
        import requests
        class Connection:
            retries = 3
            def ask(self, prompt, *, attempt: int = 0):
                if attempt >= self.retries:
                    raise RuntimeError("no answer")
                reply = requests.post("https://api.openai.com/v1/chat/completions", json=prompt)
                if reply.status_code == 429:
                    return self.ask(prompt, attempt=attempt + 1)
                return reply.json()
        """,
        note="recursion that steps a keyword-only depth and compares it",
    ),
    Valid(
        code="""
        import litellm
        def run(max_turns: int) -> None:
            step = 0
            while step < max_turns:
                litellm.completion(model="m", messages=[])
                step += 1
        """
    ),
    Valid(
        code="""
        import guardkit
        from openai import OpenAI
        client = OpenAI()
        while True:
            turn = guardkit.current_agent().request("llm_turn", {})
            if turn["decision"] != "allowed":
                break
            client.responses.create(model="m", input="hi")
        """,
        note="gated by llm_turn",
    ),
    Valid(
        code="""
        def run(client):
            while True:
                client.messages.create(model="m")
        """,
        note="an unannotated parameter is not known to be a model client",
    ),
    Valid(
        code="""
        import anthropic
        client = anthropic.Anthropic()
        while True:
            item = queue.get()
            print(item)
        """,
        note="no model call in the loop",
    ),
    Valid(
        code="""
        from langchain_anthropic import ChatAnthropic
        class Agent:
            llm: ChatAnthropic
            max_iterations = 6
            def run(self, messages):
                step = 0
                while True:
                    step += 1
                    if step >= self.max_iterations:
                        return None
                    messages.append(self.llm.invoke(messages))
        """,
        note="exit on a counter inside the body",
    ),
    Valid(
        code="""
        import litellm
        class LimitsExceeded(Exception): ...
        class Agent:
            step_limit = 30
            def __init__(self) -> None:
                self.n_calls = 0
            def query(self, messages):
                if self.n_calls >= self.step_limit:
                    raise LimitsExceeded()
                self.n_calls += 1
                return litellm.completion(model="m", messages=messages)
            def run(self, messages):
                while True:
                    messages.append(self.query(messages))
        """,
        note="the limit is enforced in the called method",
    ),
    Valid(
        code="""
        import litellm
        class Steps:
            def __init__(self, limit: int) -> None:
                self.done = 0
                self.limit = limit
            def advance(self) -> None:
                self.done += 1
            def exhausted(self) -> bool:
                return self.done >= self.limit
        def run(messages, steps: Steps):
            while not steps.exhausted():
                messages.append(litellm.completion(model="m", messages=messages))
                steps.advance()
        """,
        note="a step object's methods step the counter and compare it",
    ),
    Valid(
        code="""
        import litellm
        class Agent:
            def answer(self, messages, depth=0):
                if depth >= 8:
                    raise RuntimeError("too many tool rounds")
                reply = litellm.completion(model="m", messages=messages)
                if reply.choices[0].finish_reason == "tool_calls":
                    return self.answer(messages, depth=depth + 1)
                return reply
        """,
        note="a recursion that passes a depth on and compares it is bounded",
    ),
    Valid(
        code="""
        import litellm
        def answer(messages, continued=False):
            reply = litellm.completion(model="m", messages=messages)
            text = reply.choices[0].message.content
            if reply.choices[0].finish_reason == "length" and not continued:
                text += answer([*messages, text], continued=True)
            return text
        """,
        note="a recursion that passes a flag it rules out is one call deep at most",
    ),
    Valid(
        code="""
        import guardkit
        import litellm
        def answer(messages):
            with guardkit.model_turn():
                reply = litellm.completion(model="m", messages=messages)
            if reply.choices[0].finish_reason == "tool_calls":
                return answer(messages)
            return reply
        """,
        note="a recursion gated by llm_turn: the policy's turn budget bounds it",
    ),
)

INVALID: tuple[Invalid, ...] = (
    Invalid(
        code="""
        import anthropic
        client = anthropic.Anthropic()
        while True:
            client.messages.create(model="m", messages=[])
        """,
        line=3,
        column=0,
        expected_fix="""
            import anthropic
            client = anthropic.Anthropic()
            for _gk_turns in range(25):
                client.messages.create(model="m", messages=[])
            """,
    ),
    Invalid(
        code="""
        from openai import AsyncOpenAI
        class Agent:
            def __init__(self) -> None:
                self.client = AsyncOpenAI(base_url="https://api.deepseek.com")
            async def run(self, m):
                done = False
                while not done:
                    r = await self.client.chat.completions.create(model="ds", messages=m)
                    done = r.choices[0].finish_reason == "stop"
        """,
        line=7,
        column=8,
        note="DeepSeek via base_url, client on self",
        expected_fix="""
            from openai import AsyncOpenAI
            class Agent:
                def __init__(self) -> None:
                    self.client = AsyncOpenAI(base_url="https://api.deepseek.com")
                async def run(self, m):
                    done = False
                    _gk_turns = 0
                    while not done:
                        _gk_turns += 1
                        if _gk_turns > 25:  # guardkit: turn limit
                            break
                        r = await self.client.chat.completions.create(model="ds", messages=m)
                        done = r.choices[0].finish_reason == "stop"
            """,
    ),
    Invalid(
        code="""
        from langchain_openai import ChatOpenAI
        llm = ChatOpenAI(model="gpt-4o").bind_tools([])
        def agent(messages):
            while messages[-1].tool_calls:
                messages.append(llm.invoke(messages))
        """,
        line=4,
        column=4,
        expected_fix="""
            from langchain_openai import ChatOpenAI
            llm = ChatOpenAI(model="gpt-4o").bind_tools([])
            def agent(messages):
                _gk_turns = 0
                while messages[-1].tool_calls:
                    _gk_turns += 1
                    if _gk_turns > 25:  # guardkit: turn limit
                        break
                    messages.append(llm.invoke(messages))
            """,
    ),
    Invalid(
        code="""
        import itertools
        import ollama
        for turn in itertools.count():
            ollama.chat(model="llama3", messages=[])
        """,
        line=3,
        column=0,
    ),
    Invalid(
        code="""
        from anthropic import Anthropic
        def loop(client: Anthropic, messages) -> None:
            while True:
                for block in client.messages.create(model="m", messages=messages).content:
                    print(block)
        """,
        line=3,
        column=4,
        note="client passed in as an annotated parameter",
        expected_fix="""
            from anthropic import Anthropic
            def loop(client: Anthropic, messages) -> None:
                for _gk_turns in range(25):
                    for block in client.messages.create(model="m", messages=messages).content:
                        print(block)
            """,
    ),
    Invalid(
        code="""
        import litellm
        async def agent(messages):
            response = await litellm.acompletion(model="m", messages=messages)
            while response.choices[0].message.tool_calls:
                response = await litellm.acompletion(model="m", messages=messages)
        """,
        line=4,
        column=4,
        note="a condition the model controls",
        expected_fix="""
            import litellm
            async def agent(messages):
                response = await litellm.acompletion(model="m", messages=messages)
                _gk_turns = 0
                while response.choices[0].message.tool_calls:
                    _gk_turns += 1
                    if _gk_turns > 25:  # guardkit: turn limit
                        break
                    response = await litellm.acompletion(model="m", messages=messages)
            """,
    ),
    Invalid(
        code="""
        from google import genai
        client = genai.Client()
        chat = client.chats.create(model="gemini-2.0-flash")
        message = "Plan the release."
        while True:
            message = chat.send_message(message).text
        """,
        line=5,
        column=0,
        note="a Gemini chat session",
        expected_fix="""
            from google import genai
            client = genai.Client()
            chat = client.chats.create(model="gemini-2.0-flash")
            message = "Plan the release."
            for _gk_turns in range(25):
                message = chat.send_message(message).text
            """,
    ),
    Invalid(
        code="""
        from typing import Protocol
        import litellm
        class Model(Protocol):
            def query(self, messages: list) -> dict: ...
        class LitellmModel:
            def query(self, messages: list) -> dict:
                return litellm.completion(model="m", messages=messages)
        class Agent:
            def __init__(self, model: Model) -> None:
                self.model = model
                self.messages: list = []
            def step(self) -> None:
                self.messages.append(self.query())
            def query(self) -> dict:
                return self.model.query(self.messages)
            def run(self) -> None:
                while True:
                    self.step()
        """,
        line=17,
        column=8,
        note="the model call is two methods away, behind the project's own Protocol",
        expected_fix="""
            from typing import Protocol
            import litellm
            class Model(Protocol):
                def query(self, messages: list) -> dict: ...
            class LitellmModel:
                def query(self, messages: list) -> dict:
                    return litellm.completion(model="m", messages=messages)
            class Agent:
                def __init__(self, model: Model) -> None:
                    self.model = model
                    self.messages: list = []
                def step(self) -> None:
                    self.messages.append(self.query())
                def query(self) -> dict:
                    return self.model.query(self.messages)
                def run(self) -> None:
                    for _gk_turns in range(25):
                        self.step()
            """,
    ),
    Invalid(
        code="""
        import anthropic
        client = anthropic.Anthropic()
        def run(messages, max_turns=float("inf")):
            turn = 0
            while turn < max_turns:
                turn += 1
                client.messages.create(model="m", messages=messages)
        """,
        line=5,
        column=4,
        note="an infinite limit is no bound",
        expected_fix="""
            import anthropic
            client = anthropic.Anthropic()
            def run(messages, max_turns=float("inf")):
                turn = 0
                _gk_turns = 0
                while turn < max_turns:
                    _gk_turns += 1
                    if _gk_turns > 25:  # guardkit: turn limit
                        break
                    turn += 1
                    client.messages.create(model="m", messages=messages)
            """,
    ),
    Invalid(
        code="""
        import requests
        URL = "https://openrouter.ai/api/v1/chat/completions"
        def agent(messages):
            while True:
                reply = requests.post(URL, json={"messages": messages}).json()
                messages.append(reply["choices"][0]["message"])
        """,
        line=4,
        column=4,
        note="a model called over raw HTTP",
        expected_fix="""
            import requests
            URL = "https://openrouter.ai/api/v1/chat/completions"
            def agent(messages):
                for _gk_turns in range(25):
                    reply = requests.post(URL, json={"messages": messages}).json()
                    messages.append(reply["choices"][0]["message"])
            """,
    ),
    Invalid(
        code="""
            import litellm
            def complete(messages):
                return litellm.completion(model="m", messages=messages)
            class Llm:
                def __init__(self):
                    self.completions = complete
                def run(self, messages):
                    while True:
                        messages.append(self.completions(messages))
        """,
        line=8,
        column=8,
        note="a model call behind a function held in an attribute",
        expected_fix="""
            import litellm
            def complete(messages):
                return litellm.completion(model="m", messages=messages)
            class Llm:
                def __init__(self):
                    self.completions = complete
                def run(self, messages):
                    for _gk_turns in range(25):
                        messages.append(self.completions(messages))
        """,
    ),
    Invalid(
        code="""
            import anthropic
            client = anthropic.Anthropic()
            def respond(messages, auto_run=False):
                while True:
                    messages.append(client.messages.create(model="m", messages=messages))
                    if not auto_run and input("run it? ") != "y":
                        break
        """,
        line=4,
        column=4,
        note="a prompt that only some turns ask for does not make a REPL",
        expected_fix="""
            import anthropic
            client = anthropic.Anthropic()
            def respond(messages, auto_run=False):
                for _gk_turns in range(25):
                    messages.append(client.messages.create(model="m", messages=messages))
                    if not auto_run and input("run it? ") != "y":
                        break
        """,
    ),
    Invalid(
        code="""
            from openai import OpenAI
            client = OpenAI()
            class Session:
                def reply(self, messages, tools):
                    response = client.chat.completions.create(
                        model="m", messages=messages, tools=tools
                    )
                    message = response.choices[0].message
                    if message.tool_calls:
                        messages.append(run_tools(message.tool_calls))
                        return self.reply(messages, tools)
                    return message.content
        """,
        line=4,
        column=4,
        note="a tool loop written as recursion, with no depth limit (not fixed: bounding it "
        "takes a depth parameter the callers must agree to)",
    ),
    Invalid(
        code="""
            import litellm
            completion = litellm.completion
            def answer(messages):
                while True:
                    reply = completion(model="m", messages=messages)
                    if not reply.choices[0].message.tool_calls:
                        break
        """,
        line=4,
        column=4,
        note="the model function held in a variable",
        expected_fix="""
            import litellm
            completion = litellm.completion
            def answer(messages):
                for _gk_turns in range(25):
                    reply = completion(model="m", messages=messages)
                    if not reply.choices[0].message.tool_calls:
                        break
        """,
    ),
    Invalid(
        code="""
            from langchain_core.language_models import BaseChatModel
            class CodeAgent:
                def __init__(self, model: BaseChatModel):
                    self.model = model
                def stream(self, history):
                    while True:
                        reply = self.model.invoke(history)
                        history.append(run_code(reply.content))
                        yield reply
        """,
        line=6,
        column=8,
        note="a chat model typed by LangChain's base class",
        expected_fix="""
            from langchain_core.language_models import BaseChatModel
            class CodeAgent:
                def __init__(self, model: BaseChatModel):
                    self.model = model
                def stream(self, history):
                    for _gk_turns in range(25):
                        reply = self.model.invoke(history)
                        history.append(run_code(reply.content))
                        yield reply
        """,
    ),
    Invalid(
        code="""
            from openai import OpenAI
            class Model:
                def execute(self, prompt):
                    raise NotImplementedError
            class Chat(Model):
                def execute(self, prompt):
                    return OpenAI().chat.completions.create(model="m", messages=prompt)
            class Response:
                def __init__(self, model: Model, prompt):
                    self.model = model
                    self.prompt = prompt
                def __iter__(self):
                    yield from self.model.execute(self.prompt)
                def tool_calls(self):
                    return [c for c in list(self) if c.tool_calls]
            def chain(model: Model, prompt, limit=None):
                response: Response = Response(model, prompt)
                count = 0
                while True:
                    count += 1
                    if limit and count >= limit:
                        raise ValueError("chain limit exceeded")
                    yield response
                    calls = response.tool_calls()
                    if not calls:
                        break
                    response = Response(model, run_tools(calls))
        """,
        line=19,
        column=4,
        note="a lazy response object runs the model when it is iterated; a limit that is off by "
        "default is no bound",
        expected_fix="""
            from openai import OpenAI
            class Model:
                def execute(self, prompt):
                    raise NotImplementedError
            class Chat(Model):
                def execute(self, prompt):
                    return OpenAI().chat.completions.create(model="m", messages=prompt)
            class Response:
                def __init__(self, model: Model, prompt):
                    self.model = model
                    self.prompt = prompt
                def __iter__(self):
                    yield from self.model.execute(self.prompt)
                def tool_calls(self):
                    return [c for c in list(self) if c.tool_calls]
            def chain(model: Model, prompt, limit=None):
                response: Response = Response(model, prompt)
                count = 0
                for _gk_turns in range(25):
                    count += 1
                    if limit and count >= limit:
                        raise ValueError("chain limit exceeded")
                    yield response
                    calls = response.tool_calls()
                    if not calls:
                        break
                    response = Response(model, run_tools(calls))
        """,
    ),
    Invalid(
        code="""
        from openai import OpenAI
        client = OpenAI()
        def click(elements, messages):
            clicked = None
            failures = 0
            while True:
                reply = client.chat.completions.create(model="m", messages=messages)
                try:
                    clicked = elements[int(reply.choices[0].message.content)].click()
                except (ValueError, IndexError):
                    if failures > 3:
                        break
                    failures += 1
                if clicked:
                    break
            return clicked
        """,
        line=6,
        column=4,
        note="the success flag is what a call returned (it may be empty): that turn goes round "
        "without stepping the counter",
        expected_fix="""
            from openai import OpenAI
            client = OpenAI()
            def click(elements, messages):
                clicked = None
                failures = 0
                for _gk_turns in range(25):
                    reply = client.chat.completions.create(model="m", messages=messages)
                    try:
                        clicked = elements[int(reply.choices[0].message.content)].click()
                    except (ValueError, IndexError):
                        if failures > 3:
                            break
                        failures += 1
                    if clicked:
                        break
                else:
                    raise RuntimeError("agent loop stopped after 25 turns (guardkit fix)")
                return clicked
            """,
    ),
    Invalid(
        code="""
        from openai import OpenAI
        client = OpenAI()
        def run(task):
            events = [task]
            i = 0
            while i < len(events):
                reply = client.chat.completions.create(model="m", messages=[events[i]])
                events.append(reply.choices[0].message.content)
                i += 1
        """,
        line=6,
        column=4,
        note="a counter chasing the length of a list every turn grows never catches up",
        expected_fix="""
            from openai import OpenAI
            client = OpenAI()
            def run(task):
                events = [task]
                i = 0
                _gk_turns = 0
                while i < len(events):
                    _gk_turns += 1
                    if _gk_turns > 25:  # guardkit: turn limit
                        break
                    reply = client.chat.completions.create(model="m", messages=[events[i]])
                    events.append(reply.choices[0].message.content)
                    i += 1
            """,
    ),
)
