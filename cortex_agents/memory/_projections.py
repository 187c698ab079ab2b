"""Typed projections (seed 001, F7): named slices of upstream artifacts that memory reads.

A :class:`Projection` declares the artifact type a node's output decodes as
(a pydantic model) and the slice of it a query reads. Memory ranks and shows
that slice only: the full artifact stays in the substrate, and a match's
``output`` is the slice. Projections are named and registered like presets
and scorers, so a wire declares one by name in a topological memory
declaration and every query of the stage — its own recall and its model's
tool calls — reads through it::

    headline = Projection.of_fields("headline", Analysis, ["claim_ref", "finding"])
    presets = BUILTIN_PRESETS.with_projections(headline)
    wire = WireBuilder("review", presets=presets)...stage(
        "reviewer", "reviewer", memory=Topological(preset="reviewer", projection="headline")
    )
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import BaseModel

from cortex_agents.errors import InvalidArgument, UnknownProjection
from cortex_agents.memory._extract import Extractor, projection_extractor

__all__ = ["BUILTIN_PROJECTIONS", "Projection", "ProjectionRegistry"]

_NAME: Final = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def _whole(artifact: BaseModel) -> Any:
    return artifact


@dataclass(frozen=True, slots=True, kw_only=True)
class Projection:
    """A named slice of a declared artifact type.

    Attributes:
        name: Matches ``[A-Za-z0-9_.-]+``, at most 64 characters.
        model: The pydantic model a node's (peeled) output decodes as; outputs
            that do not decode contribute an empty body and an empty slice.
        project: Maps the decoded artifact to its slice (a model, a mapping, a
            string or :class:`~cortex_agents.memory.ExtractedFields`); the
            default keeps the whole artifact, typed.
        description: One line for humans.
        extractor: The extractor queries use (built once, so the snapshot
            index caches its fields across queries).
    """

    name: str
    model: type[BaseModel]
    project: Callable[[Any], Any] = _whole
    description: str = ""
    extractor: Extractor = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise InvalidArgument(
                "projection.name", "must match `[A-Za-z0-9_.-]+`, at most 64 characters", self.name
            )
        if not (isinstance(self.model, type) and issubclass(self.model, BaseModel)):
            raise InvalidArgument("projection.model", "must be a pydantic model class", self.model)
        if not callable(self.project):
            raise InvalidArgument("projection.project", "must be callable", self.project)
        object.__setattr__(self, "extractor", projection_extractor(self.model, self.project))

    @classmethod
    def of_fields(
        cls, name: str, model: type[BaseModel], fields: Sequence[str], description: str = ""
    ) -> Projection:
        """The projection that keeps ``fields`` of ``model``, in that order.

        Raises:
            InvalidArgument: ``fields`` is empty, repeats a name, or names a
                field ``model`` does not declare.
        """
        if isinstance(fields, str) or not fields:
            raise InvalidArgument("projection.fields", "must be a non-empty list of fields", fields)
        declared = getattr(model, "model_fields", {})
        unknown = [f for f in fields if f not in declared]
        if unknown or len(set(fields)) != len(fields):
            raise InvalidArgument(
                "projection.fields",
                f"must name distinct fields of `{getattr(model, '__name__', model)}` "
                f"({', '.join(sorted(declared)) or 'none'})",
                list(fields),
            )
        kept = tuple(fields)

        def project(artifact: BaseModel) -> dict[str, Any]:
            dumped = artifact.model_dump(mode="json")
            return {name: dumped[name] for name in kept}

        project.__qualname__ = f"fields{list(kept)}"
        return cls(name=name, model=model, project=project, description=description)


class ProjectionRegistry(Mapping[str, Projection]):
    """An immutable name -> :class:`Projection` mapping."""

    __slots__ = ("_projections",)

    def __init__(self, projections: Iterable[Projection] = ()) -> None:
        table: dict[str, Projection] = {}
        for projection in projections:
            if not isinstance(projection, Projection):
                raise InvalidArgument("projections", "must hold `Projection` values", projection)
            if projection.name in table:
                raise InvalidArgument(
                    "projection.name", "must be unique in a registry", projection.name
                )
            table[projection.name] = projection
        self._projections = table

    def __getitem__(self, name: str) -> Projection:
        return self._projections[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._projections)

    def __len__(self) -> int:
        return len(self._projections)

    def __repr__(self) -> str:
        return f"ProjectionRegistry({sorted(self._projections)})"

    def resolve(self, name: str) -> Projection:
        """The projection called ``name``.

        Raises:
            UnknownProjection: no such projection; the error lists the known names.
        """
        try:
            return self._projections[name]
        except (KeyError, TypeError):
            raise UnknownProjection(str(name), sorted(self._projections)) from None

    def with_projections(
        self, *projections: Projection, replace_existing: bool = False
    ) -> ProjectionRegistry:
        """A new registry with ``projections`` added.

        Raises:
            InvalidArgument: a name already exists and ``replace_existing`` is false.
        """
        table = dict(self._projections)
        for projection in projections:
            if projection.name in table and not replace_existing:
                raise InvalidArgument(
                    "projection.name",
                    "already exists (pass replace_existing=True)",
                    projection.name,
                )
            table[projection.name] = projection
        return ProjectionRegistry(table.values())


BUILTIN_PROJECTIONS: Final = ProjectionRegistry()
"""No projection is built in: artifact types belong to the wire that declares them."""
