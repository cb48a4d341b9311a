"""Model SDKs beyond the first few (issue 20): each is a model call where the SDK's own
documentation makes one, so a loop around it without a limit is GK101, named by the call. A
client of another AWS service or a LlamaIndex object that is no model makes no model call."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]

LOOPS = {
    "bedrock": (
        'import boto3\nruntime = boto3.client("bedrock-runtime")\n',
        'runtime.converse(modelId="m", messages=[])',
        "runtime.converse",
    ),
    "bedrock_session": (
        'import boto3\nruntime = boto3.Session().client(service_name="bedrock-runtime")\n',
        'runtime.invoke_model(modelId="m", body="{}")',
        "runtime.invoke_model",
    ),
    "gemini_legacy": (
        'import google.generativeai as genai\nmodel = genai.GenerativeModel("gemini-pro")\n',
        'model.generate_content("hi")',
        "model.generate_content",
    ),
    "gemini_legacy_chat": (
        'import google.generativeai as genai\nchat = genai.GenerativeModel("g").start_chat()\n',
        'chat.send_message("hi")',
        "chat.send_message",
    ),
    "vertex": (
        "from vertexai.generative_models import GenerativeModel\n"
        'model = GenerativeModel("gemini-1.5-pro")\n',
        'model.generate_content("hi")',
        "model.generate_content",
    ),
    "cohere": (
        "import cohere\nco = cohere.ClientV2()\n",
        'co.chat(model="command-r", messages=[])',
        "co.chat",
    ),
    "hf_inference": (
        "from huggingface_hub import InferenceClient\nhf = InferenceClient()\n",
        "hf.chat_completion(messages=[])",
        "hf.chat_completion",
    ),
    "llama_cpp": (
        'from llama_cpp import Llama\nllm = Llama(model_path="m.gguf")\n',
        "llm.create_chat_completion(messages=[])",
        "llm.create_chat_completion",
    ),
    "vllm": ('from vllm import LLM\nllm = LLM(model="m")\n', 'llm.generate("hi")', "llm.generate"),
    "llama_index": (
        "from llama_index.llms.openai import OpenAI\nllm = OpenAI()\n",
        'llm.complete("hi")',
        "llm.complete",
    ),
    "llama_index_base": (
        "from llama_index.core.base.llms.base import BaseLLM\n"
        "from app.models import load\n"
        "llm: BaseLLM = load()\n",
        'llm.complete("hi")',
        "llm.complete",
    ),
    "instructor": (
        "import instructor\nfrom openai import OpenAI\nclient = instructor.from_openai(OpenAI())\n",
        'client.chat.completions.create(model="m", messages=[], response_model=str)',
        "client.chat.completions.create",
    ),
    "instructor_with_completion": (
        "import instructor\nimport anthropic\n"
        "client = instructor.from_anthropic(anthropic.Anthropic())\n",
        'client.messages.create_with_completion(model="m", messages=[], response_model=str)',
        "client.messages.create_with_completion",
    ),
    "instructor_provider": (
        'import instructor\nclient = instructor.from_provider("openai/gpt-4o")\n',
        "client.create(messages=[], response_model=str)",
        "client.create",
    ),
    "assistants": (
        "from openai import OpenAI\nclient = OpenAI()\n",
        'client.beta.threads.runs.create_and_poll(thread_id="t", assistant_id="a")',
        "client.beta.threads.runs.create_and_poll",
    ),
    "litellm_text": (
        "import litellm\n",
        'litellm.text_completion(model="m", prompt="hi")',
        "litellm.text_completion",
    ),
}

NO_MODEL = {
    "s3": ('import boto3\ns3 = boto3.client("s3")\n', 's3.get_object(Bucket="b", Key="k")'),
    "llama_index_reader": (
        "from llama_index.core import SimpleDirectoryReader\n"
        'reader = SimpleDirectoryReader("docs")\n',
        "reader.load_data()",
    ),
}


def _loop(tmp_path: Path, head: str, call: str) -> None:
    loop = f"def run():\n    while True:\n        reply = {call}\n        if reply:\n"
    loop += "            return reply\n"
    (tmp_path / "agent.py").write_text(f"{head}\n\n{loop}")


@pytest.mark.parametrize("sdk", sorted(LOOPS))
def test_a_loop_around_the_sdks_model_call_is_unbounded(
    sdk: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    head, call, symbol = LOOPS[sdk]
    monkeypatch.chdir(tmp_path)
    _loop(tmp_path, head, call)
    line = head.count("\n") + 4  # the ``while`` after the head, two blank lines and ``def``
    assert ("agent.py", line, "GK101", symbol) in found()


@pytest.mark.parametrize("case", sorted(NO_MODEL))
def test_a_client_that_is_no_model_makes_no_model_call(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner
    from guardkit.codemods.cli import scan

    head, call = NO_MODEL[case]
    monkeypatch.chdir(tmp_path)
    _loop(tmp_path, head, call)
    result = CliRunner().invoke(scan, [".", "--no-cache"])
    assert result.exit_code == 0, result.output
