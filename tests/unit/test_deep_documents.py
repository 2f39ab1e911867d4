"""A document nested as deep as kube-apiserver stores (10,000 levels) decodes in the
controller's threads once `allow_deep_documents` ran (make fuzz found the informer wedged
on a 1,500-level job: json.loads raised RecursionError on every relist)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap


def test_a_10000_level_document_decodes_in_a_controller_thread() -> None:
    # In a fresh interpreter: the settings are process-wide and last for the process.
    script = textwrap.dedent(
        """
        import json, threading
        from ascendjob_controller.controller import allow_deep_documents
        text = '{"a":' * 10000 + '1' + '}' * 10000
        try:
            json.loads(text)
        except RecursionError:
            print("default: RecursionError")
        allow_deep_documents()
        out = []
        t = threading.Thread(target=lambda: out.append(json.loads(text)))
        t.start(); t.join()
        depth, node = 0, out[0]
        while isinstance(node, dict):
            depth, node = depth + 1, node["a"]
        print("decoded", depth)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["default: RecursionError", "decoded 10000"]
    json.loads("[]")  # this process is untouched
