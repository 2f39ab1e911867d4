"""`make fuzz`: mutated AscendJobs POSTed raw at a fresh cluster with the real controller.

Issue 10, section 3. `python -m hack.fuzz --help` for the options; docs/fuzz.md for what is
checked and the figures of a full run. Modules: mutate (the cases), wire (raw HTTP),
observe (watches and the /healthz poller), process (the controller subprocess), run (one
run, in order), checks (pass/fail), report (the figures), cli (the command line).
"""
