"""The AscendJob domain as pure functions (design section 4): no I/O, no clock, no globals.

Entry point: `plan.plan(job, pods, services, podgroup, now, options) -> Plan`. The modules
below it read top-down: types (vocabulary and the defaulted view), validation, env and desired
(the children), restart (policies and the persisted restart ledger), status (the state
machine), plan (putting it together). Nothing here imports kube/, metrics or the reconciler.
"""
