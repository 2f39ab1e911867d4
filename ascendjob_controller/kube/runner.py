"""A small controller-runtime style runner: N workers pull keys and reconcile them.

A reconcile is a function of a key returning a `Result` (done, requeue, requeue after a delay)
or raising (an error: a rate-limited requeue). The runner starts workers only after every
informer has synced, so no reconcile ever plans from an empty cache. Stopping is graceful:
workers stop taking keys, in-flight reconciles get until the deadline to finish, then the
informers stop. The controller_runtime_* metrics are recorded with label controller=<name>.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ascendjob_controller import metrics
from ascendjob_controller.kube.informer import Informer, wait_for_cache_sync
from ascendjob_controller.kube.workqueue import RateLimitingQueue

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Result:
    """What a reconcile wants next: nothing, a rate-limited retry, or a retry after a delay.

    `requeue_after` is "come back within this long": a processing of the key that starts
    sooner, for any other reason, drops it (`workqueue.add_batched`). That processing returns
    its own Result, worked out afresh from what it reads, so a deadline or a backstop still
    needed is set again, and one that is not costs no reconcile. (controller-runtime keeps
    the timer, and a level-triggered reconciler then runs once more for nothing.) A
    rate-limited retry after an error is kept whatever happens.
    """

    requeue_after: float | None = None
    requeue: bool = False


class Runner:
    def __init__(
        self,
        name: str,
        queue: RateLimitingQueue,
        reconcile: Callable[[str], Result],
        *,
        workers: int = 4,
        informers: Sequence[Informer] = (),
        controller_label: str = metrics.CONTROLLER_NAME,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.name = name
        self.queue = queue
        self._reconcile = reconcile
        self._workers = workers
        self._informers = list(informers)
        self._threads: list[threading.Thread] = []
        self._started = threading.Event()
        metrics.init_controller_metrics(controller_label)
        self._m_active = metrics.ACTIVE_WORKERS.labels(controller=controller_label)
        self._m_time = metrics.RECONCILE_TIME.labels(controller=controller_label)
        self._m_errors = metrics.RECONCILE_ERRORS.labels(controller=controller_label)
        self._m_total = {
            result: metrics.RECONCILE_TOTAL.labels(controller=controller_label, result=result)
            for result in metrics.RECONCILE_RESULTS
        }
        metrics.MAX_CONCURRENT_RECONCILES.labels(controller=controller_label).set(workers)
        self._m_active.set(0)

    def start(self, sync_timeout: float | None = None) -> bool:
        """Block until the informers synced, then start the workers. False if sync timed out."""
        timeout = float("inf") if sync_timeout is None else sync_timeout
        deadline = time.monotonic() + timeout
        while not wait_for_cache_sync(self._informers, min(1.0, timeout)):
            if self.queue.shutting_down():
                return False
            if time.monotonic() >= deadline:
                log.error("caches did not sync", extra={"controller": self.name})
                return False
        for i in range(self._workers):
            thread = threading.Thread(
                target=self._work, name=f"{self.name}-worker-{i}", daemon=True
            )
            self._threads.append(thread)
            thread.start()
        self._started.set()
        log.info("workers started", extra={"controller": self.name, "workers": self._workers})
        return True

    def started(self) -> bool:
        return self._started.is_set()

    def workers_alive(self) -> int:
        """How many of the started workers are still running (each should, until `stop`)."""
        return sum(thread.is_alive() for thread in self._threads)

    def stop(self, timeout: float, *, stop_informers: bool = True) -> bool:
        """Stop taking keys; wait up to `timeout` for in-flight reconciles. True if all ended."""
        deadline = time.monotonic() + timeout
        self.queue.shutdown(drain=False)
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        finished = not any(t.is_alive() for t in self._threads)
        if not finished:
            log.warning("reconciles still running at shutdown deadline", extra={"c": self.name})
        if stop_informers:
            for informer in self._informers:
                informer.stop(max(0.1, deadline - time.monotonic()))
        return finished

    def _work(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            self._process(key)

    def _process(self, key: str) -> None:
        self._m_active.inc()
        start = time.monotonic()
        try:
            result = self._reconcile(key)
        except Exception:
            log.exception("reconcile failed", extra={"controller": self.name, "key": key})
            self._m_errors.inc()
            self._count("error")
            self.queue.add_rate_limited(key)
        else:
            if result.requeue_after is not None and result.requeue_after > 0:
                self.queue.forget(key)
                self.queue.add_batched(key, result.requeue_after)
                self._count("requeue_after")
            elif result.requeue:
                self.queue.add_rate_limited(key)
                self._count("requeue")
            else:
                self.queue.forget(key)
                self._count("success")
        finally:
            self._m_time.observe(time.monotonic() - start)
            self._m_active.dec()
            self.queue.done(key)

    def _count(self, result: str) -> None:
        self._m_total[result].inc()
