"""An approval nobody in the test gives fails that test at once, naming the tool and approver."""

from __future__ import annotations

import time

HELD = """
import guardkit
import pytest
from guardkit.loop import run

PAY = {"budget": 50, "tools": {"llm_turn": {"cost": 0},
                               "pay": {"cost": 5, "requires_approval": True}}}


@guardkit.tool()
def pay(amount: int) -> str:
    return f"paid {amount}"


TOOLS = {"pay": pay}


@pytest.mark.guard_policy(PAY)
def test_a_hand_written_loop(guard_agent):
    for name, args in [("pay", {"amount": 20})]:
        try:
            result = TOOLS[name](**args)
        except Exception as e:  # the agent's own handler must not swallow the failure
            result = f"error: {e}"
    assert result == "paid 20"


@pytest.mark.guard_policy(PAY)
def test_an_async_tool(guard_agent):
    import asyncio

    @guardkit.tool("pay")
    async def apay(amount: int) -> str:
        return "paid"

    asyncio.run(apay(amount=3))


@pytest.mark.guard_policy(PAY)
def test_the_loop(guard_agent, scripted_model):
    model = scripted_model([[("pay", {"amount": 1})], "done"])
    run(model, guard_agent, {"pay": pay.__wrapped__}, [], max_turns=3)


@pytest.mark.guard_policy(PAY)
def test_an_approver_rule_for_another_tool_does_not_help(guard_agent, approver):
    approver.approve("refund")
    pay(amount=20)


@pytest.mark.guard_policy(PAY)
def test_an_approver_rule_decides(guard_agent, approver):
    approver.approve("pay")
    assert pay(amount=20) == "paid 20"
"""


def test_an_approval_nobody_gives_fails_the_test_at_once(pytester, run):
    pytester.makepyfile(test_held=HELD)
    started = time.monotonic()
    result = run(pytester)
    assert time.monotonic() - started < 60  # the caller's 300 s wait is never taken
    result.assert_outcomes(passed=1, failed=4)
    result.stdout.fnmatch_lines(
        [
            "*guardkit: the call of 'pay' (act-*, agent 'agent') waits for a human's approval and "
            "nobody in this test gives it. Request the `approver` fixture and add a rule: "
            "approver.approve('pay') or approver.reject('pay', reason=...)*",
        ]
    )
    failures = result.stdout.str().split("_ test_")[1:]
    assert len(failures) == 4
    assert all("Request the `approver` fixture" in text for text in failures)
    assert "error: " not in result.stdout.str()  # the loop's except Exception let it through


def test_the_wait_is_configurable_and_a_human_from_elsewhere_can_decide(pytester, run):
    pytester.makepyfile(
        test_elsewhere="""
        import threading
        import guardkit
        import pytest

        @pytest.mark.guard_policy(budget=5, tools={"pay": {"cost": 0, "requires_approval": True}})
        def test_approved_from_a_thread(guard, guard_agent):
            def human():
                while not guard.pending("agent"):
                    pass
                guard.approve("agent", guard.pending("agent")[0]["action"]["action_id"], "alice")

            threading.Thread(target=human, daemon=True).start()
            assert guardkit.tool("pay", poll=0.01)(lambda: "paid")() == "paid"
        """
    )
    run(pytester, "--guard-approval-wait", "10").assert_outcomes(passed=1)
    pytester.makeini("[pytest]\nguard_approval_wait = 0.2\n")
    pytester.makepyfile(
        test_nobody="""
        import guardkit
        import pytest

        @pytest.mark.guard_policy(budget=5, tools={"pay": {"cost": 0, "requires_approval": True}})
        def test_nobody(guard_agent):
            guardkit.tool("pay", poll=0.01)(lambda: "paid")()
        """
    )
    failed = run(pytester, "test_nobody.py")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*nobody in this test gives it within guard_approval_wait=0.2s*"])
    bad = run(pytester, "-o", "guard_approval_wait=soon")
    assert bad.ret == 4
    bad.stderr.fnmatch_lines(["*guard_approval_wait must be seconds, got 'soon'*"])
