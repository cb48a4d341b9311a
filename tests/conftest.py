"""Suite-wide setup: hypothesis profiles and the shared strategies module.

``GUARDKIT_HYPOTHESIS_PROFILE=long`` runs the property and stateful tests much harder (nightly);
the default profile keeps ``make test`` fast. Hypothesis draws from pytest-randomly's seed (the
header prints ``Using --randomly-seed=N``), so ``-p randomly_seed=N`` replays a failing run, and
a failure also prints the ``@reproduce_failure`` blob. ``tests/strategies.py`` is registered as
the module ``strategies`` so tests can ``import strategies`` under ``--import-mode=importlib``
(which puts no test directory on ``sys.path``).

Everything loaded on first use is loaded here, before any test: pytester's in-process runs
(the pytest plugin's tests) drop the modules an inner run imported first, while what holds them
stays (``guardkit``'s cached public names, ``httpx``'s map of ``httpcore``'s exceptions), so a
module first imported inside an inner run would be imported twice, as two sets of classes.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import httpcore  # noqa: F401 (loaded before any inner run: see above)
import pytest
from hypothesis import HealthCheck, settings

import guardkit
import guardkit.client  # the HTTP clients load on first use too

for _name in guardkit.__all__:
    getattr(guardkit, _name)

settings.register_profile(
    "default",
    deadline=None,
    max_examples=30,
    stateful_step_count=30,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile(
    "long",
    deadline=None,
    max_examples=1000,
    stateful_step_count=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.load_profile(os.environ.get("GUARDKIT_HYPOTHESIS_PROFILE", "default"))


def _register_strategies() -> None:
    if "strategies" in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(
        "strategies", Path(__file__).with_name("strategies.py")
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["strategies"] = module
    spec.loader.exec_module(module)


_register_strategies()


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    # After pytest-randomly chose (and printed) the run's seed; an explicit --hypothesis-seed wins.
    from hypothesis import core

    seed = config.getoption("randomly_seed", None)
    if config.getoption("hypothesis_seed", None) is None and isinstance(seed, int):
        core.global_force_seed = seed
