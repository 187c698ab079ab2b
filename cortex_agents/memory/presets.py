"""Named walk specs ("presets") and the open registry that holds them.

Built in (DESIGN §5)::

    default    ancestors       graph 1    temporal 1    semantic 1
    analyst    ancestors       graph 1    temporal 1    semantic 1
    reviewer   ancestors       graph 1.5  temporal 1    semantic 1
    planner    bidirectional   graph 1    temporal 1.5  semantic 1

A registry is a value: :meth:`PresetRegistry.with_presets` returns a new one,
so wire authors add presets without touching library code or global state::

    presets = BUILTIN_PRESETS.with_presets(
        Preset(name="auditor", spec=WalkSpec(direction="bidirectional", limit=5))
    )
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from cortex_agents.errors import InvalidArgument, UnknownPreset
from cortex_agents.memory.spec import WalkSpec, Weights

__all__ = ["BUILTIN_PRESETS", "Preset", "PresetRegistry"]

_NAME: Final = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """A named walk spec.

    Attributes:
        name: Matches ``[A-Za-z0-9_.-]+``, at most 64 characters.
        spec: The walk it stands for.
        description: One line for humans (shown by the CLI and the tool schema).
    """

    name: str
    spec: WalkSpec
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise InvalidArgument(
                "preset.name", "must match `[A-Za-z0-9_.-]+`, at most 64 characters", self.name
            )
        if not isinstance(self.spec, WalkSpec):
            raise InvalidArgument("preset.spec", "must be a `WalkSpec`", self.spec)


class PresetRegistry(Mapping[str, Preset]):
    """An immutable name -> :class:`Preset` mapping."""

    __slots__ = ("_presets",)

    def __init__(self, presets: Iterable[Preset] = ()) -> None:
        table: dict[str, Preset] = {}
        for preset in presets:
            if preset.name in table:
                raise InvalidArgument("preset.name", "must be unique in a registry", preset.name)
            table[preset.name] = preset
        self._presets = table

    def __getitem__(self, name: str) -> Preset:
        return self._presets[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._presets)

    def __len__(self) -> int:
        return len(self._presets)

    def __repr__(self) -> str:
        return f"PresetRegistry({sorted(self._presets)})"

    def resolve(self, name: str) -> Preset:
        """The preset called ``name``.

        Raises:
            UnknownPreset: no such preset; the error lists the known names.
        """
        try:
            return self._presets[name]
        except (KeyError, TypeError):
            raise UnknownPreset(str(name), sorted(self._presets)) from None

    def spec(self, name: str, **overrides: Any) -> WalkSpec:
        """The preset's walk spec with ``overrides`` applied (and validated)."""
        base = self.resolve(name).spec
        return replace(base, **overrides) if overrides else base

    def with_presets(self, *presets: Preset, replace_existing: bool = False) -> PresetRegistry:
        """A new registry with ``presets`` added.

        Raises:
            InvalidArgument: a name already exists and ``replace_existing`` is false.
        """
        table = dict(self._presets)
        for preset in presets:
            if preset.name in table and not replace_existing:
                raise InvalidArgument(
                    "preset.name", "already exists (pass replace_existing=True)", preset.name
                )
            table[preset.name] = preset
        return PresetRegistry(table.values())


BUILTIN_PRESETS: Final = PresetRegistry(
    [
        Preset(name="default", spec=WalkSpec(), description="ancestors, equal weights"),
        Preset(name="analyst", spec=WalkSpec(), description="ancestors, equal weights"),
        Preset(
            name="reviewer",
            spec=WalkSpec(weights=Weights(graph=1.5)),
            description="ancestors, graph axis weighted 1.5",
        ),
        Preset(
            name="planner",
            spec=WalkSpec(direction="bidirectional", weights=Weights(temporal=1.5)),
            description="both directions, temporal axis weighted 1.5",
        ),
    ]
)
