"""The differential fidelity suite: one corpus of requests, sent to the local cluster and to a
real kube-apiserver, answers compared after normalising what must differ.

`make fidelity` (or `.venv/bin/python -m hack.fidelity`) runs it. The corpus (corpus/) is a
list of cases, each a list of steps; every case runs in its own namespace on both servers.
"""
