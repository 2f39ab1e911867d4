"""Generic controller machinery, knowing nothing about AscendJob (design section 3).

client.py          raw-JSON REST access: retries, ambiguous-create read-back, QPS, metrics
informer.py        reflector (list + watch) -> indexed store -> ordered event handlers
workqueue.py       de-duplicating, delaying, rate-limited queue of keys
ratelimit.py       per-key exponential back-off and token buckets
expectations.py    creates/deletes in flight, so a stale cache never double-creates
leaderelection.py  coordination.k8s.io/v1 Lease election, safe against clock skew
events.py          core/v1 Event recorder: background, aggregated, rate-limited
runner.py          N workers: key -> reconcile -> Result, controller_runtime_* metrics
"""
