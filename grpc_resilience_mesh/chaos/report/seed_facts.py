"""The seed's figures that no column of ours can hold: a reference row's free-form keys (what
the seed varied, what came of it, as in metastable-four-panel's trigger, load and outcome) are
printed as a note under the table, so a seed value is never dropped for want of a column."""

from __future__ import annotations

from collections.abc import Collection

from grpc_resilience_mesh.chaos.experiment.model import ReferenceRow


def has_a_column(ref: ReferenceRow, columns: Collection[str]) -> bool:
    """Whether any of the row's figures stands under one of `columns` (else its seed row would
    be blank)."""
    return any(key in columns for key in ref.values)


def seed_facts(references: list[ReferenceRow], columns: Collection[str]) -> list[str]:
    """A note per reference row with figures outside `columns`: `seed VARIANT/PHASE: key: value`,
    the pairs two spaces apart (a value may hold commas and semicolons of its own)."""
    notes = []
    for ref in references:
        extra = [f"{key}: {value}" for key, value in ref.values.items() if key not in columns]
        if extra:
            notes.append(f"seed {ref.variant}/{ref.phase}: " + "  ".join(extra))
    return notes
