"""The codemods under libcst's own ``CodemodTest`` harness (unittest style, as libcst tests)."""

from __future__ import annotations

from guardkit.codemods.transforms import BoundModelLoops
from libcst.codemod import CodemodTest


class TestBoundModelLoops(CodemodTest):
    TRANSFORM = BoundModelLoops

    def test_bounds_and_is_idempotent(self) -> None:
        before = """
            import ollama
            while True:
                ollama.chat(model="llama3", messages=[])
        """
        after = """
            import ollama
            for _gk_turns in range(3):
                ollama.chat(model="llama3", messages=[])
        """
        self.assertCodemod(before, after, max_turns=3)
        self.assertCodemod(after, after, max_turns=3, expected_skip=True)

    def test_skips_a_module_without_model_calls(self) -> None:
        code = """
            while True:
                pass
        """
        self.assertCodemod(code, code, expected_skip=True)
