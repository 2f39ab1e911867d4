"""The peers our controller is measured against in `hack/bench_peers.py` (issue 12).

`kopf_operator` is the same job lifecycle written as a kopf user would write it, `perfect` does
only the minimal writes from raw watches, and `proxy` counts what each of them (and our
controller) sends. `lifecycle` holds the bodies and the state rule the two peers share.
"""
