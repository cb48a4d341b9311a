"""Suite-wide setup: hypothesis profiles and the shared strategies module.

``GUARDKIT_HYPOTHESIS_PROFILE=long`` runs the property and stateful tests much harder (nightly);
the default profile keeps ``make test`` fast. ``tests/strategies.py`` is registered as the module
``strategies`` so tests can ``import strategies`` under ``--import-mode=importlib`` (which puts
no test directory on ``sys.path``).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    deadline=None,
    max_examples=30,
    stateful_step_count=30,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "long",
    deadline=None,
    max_examples=1000,
    stateful_step_count=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
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
