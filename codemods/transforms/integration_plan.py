"""Decide which framework construction sites get guardkit's integration: those whose integration
removes a finding.

The analysis is the judge. Each candidate site's edit is made on a copy of the module's ``ast``
(``integration_sites.attach``) and the module analysed again in its project environment: a site
whose integration makes a reported GK102 or GK201 finding go away (a tool it hands to the agent
or registers on it, a run of the agent) is kept. A site that hands over tools defined in other
modules is kept when one of them is reported ungated anywhere in the project (``ungated``, the
qualified names the fix collected before changing anything). Everything else is left alone, so
an agent whose tools and runs are already guarded is not touched.
"""

from __future__ import annotations

import ast
from collections import Counter

from ..analysis.env import Env
from ..analysis.facts import analyze
from ..analysis.handed import tool_names
from ..analysis.imports import ImportMap
from ..analysis.tree import Tree
from ..analysis.values import Values
from ..config import Config
from ..parsing import parse_module
from ..rules import RULES_BY_ID
from ..scanner import analyse_source
from .integration_sites import Site, attach, find_sites

__all__ = ["plan"]

_RULES = ("GK102", "GK201")
Keys = Counter[tuple[str, str]]


def _keys(module: ast.Module, path: str, config: Config, name: str, env: Env | None) -> Keys:
    """``(rule, symbol)`` of every GK102/GK201 finding in ``module`` (suppressions aside)."""
    facts = analyze(
        module, config.catalog, name=name, is_package=path.endswith("__init__.py"), env=env
    )
    return Counter(
        (f.rule, f.symbol) for rule in _RULES for f in RULES_BY_ID[rule].check(facts, path)
    )


def _guarded_tools(
    module: ast.Module, path: str, config: Config, name: str, env: Env | None
) -> set[str]:
    """What the constructions a gate guards from outside hand over as tools (an ADK agent
    whose runner is given to ``guard``)."""
    tree = Tree(module)
    imports = ImportMap(
        tree.nodes(ast.Import, ast.ImportFrom),
        name,
        path.endswith("__init__.py"),
        config.catalog.known,
    )
    values = Values(tree, imports, config.catalog, name, env.kind_map() if env else None)
    return {tool for call in values.guarded for tool in tool_names(call, tree, values)}


def plan(
    code: str,
    path: str,
    config: Config,
    *,
    name: str = "",
    env: Env | None = None,
    ungated: frozenset[str] = frozenset(),
) -> tuple[Site, ...]:
    """The sites of module ``name`` (source ``code``) whose integration removes a finding;
    ``ungated`` holds the qualified names of the project's tools reported ungated."""
    module = parse_module(code, path)
    tree = Tree(module)
    imports = ImportMap(
        tree.nodes(ast.Import, ast.ImportFrom),
        name,
        path.endswith("__init__.py"),
        config.catalog.known,
    )
    sites = find_sites(tree, imports, config.catalog.gates)
    if not sites:
        return ()
    selected = Config(select=_RULES, catalog=config.catalog)
    result = analyse_source(code.encode(), path, selected, name=name, env=env, force=True)[0]
    reported = {(f.rule, f.symbol) for f in result.findings}
    if not reported and not ungated:
        return ()
    before = _keys(module, path, config, name, env)
    values = Values(tree, imports, config.catalog, name, env.kind_map() if env else None)
    calls = {(c.lineno, c.col_offset): c for c in tree.nodes(ast.Call)}
    kept: list[Site] = []
    for site in sites:
        if ungated.intersection(tool_names(calls[site.position], tree, values)):
            kept.append(site)
            continue
        trial = parse_module(code, path)
        attach(trial, site)
        if ungated and ungated.intersection(_guarded_tools(trial, path, config, name, env)):
            kept.append(site)  # ``guard(runner)``: the tools go to the agent the runner runs
            continue
        after = _keys(trial, path, config, name, env)
        if any(after[key] < before[key] for key in reported):
            kept.append(site)
    return tuple(kept)
