"""`make chaos`: hundreds of AscendJobs of known outcome under injected faults (issue 10).

Two `ascendjob-controller run --leader-elect` replicas work against the embedded local
cluster (or, with `--backend real`, a real kube-apiserver behind a fault proxy) while the API
fails requests (500 and 429), cuts watches, forces 410 Expired, resets connections,
partitions the leader silently, and the leader is SIGKILLed again and again.
Every job's script (the simulated kubelet's exit codes) is chosen up front, so its terminal
state, reason and exact restart count are known before it is created; the run then checks
them all, plus that no job ever had two pods for one replica index. See docs/chaos.md.

Modules: `jobs` (the mix and its expectations), `monitor` (an exact observer of every write),
`backends` (the local or real bed and the monitor's feed), `faultproxy` (the HTTP faults in
front of a real kube-apiserver), `proxy` (the TCP resets and partitions), `replicas` (the
controller processes), `faults` (the fault schedule), `checks` (the verdicts), `run` (the
orchestration), `report` (the figures), `cli` (arguments).
"""
