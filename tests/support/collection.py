"""Which test modules a run can leave unimported: those whose every test its -m expression leaves out.

A module marked as a whole (`pytestmark = pytest.mark.browser`, or a list of marks) says so in its
text, so a run of `-m "not slow and not browser and not process"` (`make test-fast`) need not import
it, nor what it imports (Playwright, the MCP SDK, Schemathesis building a test per operation): pytest
would import it in every worker only to deselect all of its tests. A folder whose test modules are all
left out is left out whole, with its conftest.py. Whatever else a test carries (its own marks, its
parameters' marks, a conftest's hook adding some), the module is left out only when the expression
is false for every combination of them, so nothing it would select is lost; without -m, for an
expression this cannot read, or with MEMORYHUB_TEST_COLLECT_ALL=1 (to check that this loses nothing),
every module is imported as usual.
"""

import ast
import fnmatch
import functools
import itertools
import os
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

COLLECT_ALL_VARIABLE = "MEMORYHUB_TEST_COLLECT_ALL"
# Past this many names in the expression, trying every combination of them costs more than it saves.
MAX_NAMES = 8


@functools.cache
def module_marks(path: Path) -> frozenset[str]:
    """The names of the marks a test module's top-level `pytestmark` gives all its tests (pytest.mark.NAME)."""
    try:
        source = path.read_bytes()
        tree = ast.parse(source, filename=str(path)) if b"pytestmark" in source else None
    except (OSError, SyntaxError, ValueError):
        tree = None  # imported as usual, and pytest reports what is wrong with it
    if tree is None:
        return frozenset()
    names: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in statement.targets
        ):
            values = statement.value.elts if isinstance(statement.value, ast.List | ast.Tuple) else [statement.value]
            names.update(mark for value in values if (mark := _mark_name(value)) is not None)
    return frozenset(names)


def _mark_name(node: ast.expr) -> str | None:
    """NAME for `pytest.mark.NAME`, None for anything else (a call such as usefixtures(...) gives no name)."""
    match node:
        case ast.Attribute(value=ast.Attribute(value=ast.Name(id="pytest"), attr="mark"), attr=name):
            return name
    return None


@functools.cache
def _expression(text: str) -> Expression | None:
    try:
        expression = Expression.compile(text)
    except (SyntaxError, pytest.UsageError):
        return None  # pytest itself reports the bad expression
    return expression if len(expression.idents()) <= MAX_NAMES else None


class _MarkArguments(Exception):
    """The expression asks about a mark's arguments, which a module's text does not settle."""


class _Carrying:
    """An -m matcher for a test that carries exactly these marks."""

    def __init__(self, marks: frozenset[str]) -> None:
        self.marks = marks

    def __call__(self, name: str, /, **arguments: str | int | bool | None) -> bool:
        if arguments:
            raise _MarkArguments
        return name in self.marks


def left_out(marks: frozenset[str], expression_text: str) -> bool:
    """Whether the -m expression leaves out every test that carries these marks, whatever else it carries."""
    expression = _expression(expression_text) if expression_text.strip() else None
    if expression is None or not marks:
        return False
    others = sorted(expression.idents() - marks)
    combinations = itertools.chain.from_iterable(
        itertools.combinations(others, count) for count in range(len(others) + 1)
    )
    try:
        return not any(expression.evaluate(_Carrying(marks | set(extra))) for extra in combinations)
    except _MarkArguments:
        return False


def _is_test_module(path: Path, config: pytest.Config) -> bool:
    return path.suffix == ".py" and any(
        fnmatch.fnmatch(path.name, pattern) for pattern in config.getini("python_files")
    )


def ignored(path: Path, config: pytest.Config) -> bool:
    """For pytest_ignore_collect: a test module, or a folder of them, whose every test -m leaves out."""
    expression_text = config.option.markexpr
    if not expression_text or os.environ.get(COLLECT_ALL_VARIABLE) == "1":
        return False
    if path.is_dir():
        modules = [module for module in path.rglob("*.py") if _is_test_module(module, config)]
        return bool(modules) and all(left_out(module_marks(module), expression_text) for module in modules)
    return _is_test_module(path, config) and left_out(module_marks(path), expression_text)
