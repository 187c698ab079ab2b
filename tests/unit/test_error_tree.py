"""One exception tree: every exception class cortex-agents defines derives from `CortexError`."""

import importlib
import inspect
import pkgutil

import pytest

import cortex_agents
from cortex_agents import errors
from cortex_agents.errors import CortexError


def _modules() -> list[str]:
    found = pkgutil.walk_packages(cortex_agents.__path__, prefix="cortex_agents.")
    # a `__main__` module runs its program when imported; it defines no classes
    return sorted(info.name for info in found if not info.name.endswith(".__main__"))


def _exception_classes() -> dict[str, type[BaseException]]:
    classes: dict[str, type[BaseException]] = {}
    for name in _modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__.startswith("cortex_agents")
            ):
                classes[f"{value.__module__}.{value.__qualname__}"] = value
    return classes


def test_every_exception_class_in_the_package_derives_from_cortex_error():
    classes = _exception_classes()
    outside = sorted(name for name, cls in classes.items() if not issubclass(cls, CortexError))
    assert outside == []
    # the walk did reach the modules that define errors outside errors.py
    assert "cortex_agents.rewrite.admission.Rejection" in classes
    assert "cortex_agents.tools.binding._Unavailable" in classes


def test_public_errors_are_defined_in_errors_py_and_drawn_in_its_tree():
    classes = _exception_classes()
    public = {n: c for n, c in classes.items() if not c.__name__.startswith("_")}
    internal = {"cortex_agents.rewrite.admission.Rejection"}  # admit() turns it into a fact
    elsewhere = sorted(
        n for n in public if not n.startswith("cortex_agents.errors.") and n not in internal
    )
    assert elsewhere == []
    tree = errors.__doc__ or ""
    undrawn = sorted(
        c.__name__
        for c in vars(errors).values()
        if inspect.isclass(c) and issubclass(c, CortexError) and f" {c.__name__}" not in tree
    )
    assert undrawn == []


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("cortex_agents.persistence", "UnknownThread"),
        ("cortex_agents.persistence.transfer", "UnknownThread"),
        ("cortex_agents.stages", "ModelUnavailable"),
        ("cortex_agents.stages.llm", "ModelUnavailable"),
        ("cortex_agents.testing", "NetworkBlocked"),
        ("cortex_agents.testing.network", "NetworkBlocked"),
    ],
)
def test_moved_errors_still_import_from_where_they_did(module, name):
    assert getattr(importlib.import_module(module), name) is getattr(errors, name)


def test_an_unstorable_stage_output_is_an_error_of_the_tree_and_still_a_type_error():
    from cortex_agents.runtime.stage import to_json_output

    with pytest.raises(errors.InvalidOutput, match="not JSON-serialisable") as caught:
        to_json_output({"n": 2**70})
    assert isinstance(caught.value, TypeError)
    assert caught.value.code == "invalid_output"
    assert "2**64" in caught.value.reason or "64" in caught.value.reason


def test_a_cycle_in_a_picture_names_the_cycle():
    from cortex_agents.picture.layout import _longest_path_layers

    preds = {"a": ["c"], "b": ["a"], "c": ["b"], "d": []}
    succs = {"a": ["b"], "b": ["c"], "c": ["a"], "d": []}
    with pytest.raises(errors.CycleError) as caught:
        _longest_path_layers(["d", "a", "b", "c"], preds, succs)
    cycle = caught.value.cycle
    assert cycle[0] == cycle[-1] and set(cycle) == {"a", "b", "c"}
    assert all(cycle[i + 1] in succs[cycle[i]] for i in range(len(cycle) - 1))
