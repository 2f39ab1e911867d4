"""The corpus: every module's CASES, tagged with the module's name as their area."""

from __future__ import annotations

from dataclasses import replace

from hack.fidelity.corpus import (
    acjob_envelope,
    acjobs,
    bad_input,
    configmaps,
    deletes,
    discovery,
    events,
    gc,
    leases,
    lists,
    metadata_rules,
    namespaces,
    patches,
    pods,
    services,
    tables,
    watches,
)
from hack.fidelity.steps import Case

MODULES = (
    pods,
    services,
    configmaps,
    events,
    leases,
    acjobs,
    acjob_envelope,
    patches,
    lists,
    watches,
    deletes,
    gc,
    namespaces,
    tables,
    discovery,
    bad_input,
    metadata_rules,
)


def all_cases() -> list[Case]:
    cases = []
    for module in MODULES:
        area = module.__name__.rsplit(".", 1)[-1]
        cases += [replace(c, area=area) for c in module.CASES]
    names = [c.name for c in cases]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValueError(f"duplicate case names: {sorted(duplicates)}")
    return cases
