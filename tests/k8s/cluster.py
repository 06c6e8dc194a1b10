"""kubectl against the rehearsal's API server, and a watch of the namespace's pods that checks an
invariant at every change the server reports (not at samples that could miss a dip)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]
NAMESPACE = "mesh"
APP = "app.kubernetes.io/name"


@dataclass(frozen=True)
class Kubectl:
    """The rehearsal's kubectl (KUBECONFIG in the environment names the admin's token)."""

    binary: str
    namespace: str = NAMESPACE

    def run(
        self, *args: str, check: bool = True, timeout: float = 120.0, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [self.binary, "--namespace", self.namespace, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            input=stdin,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        return done

    def get(self, *args: str) -> Obj:
        parsed: Obj = json.loads(self.run("get", *args, "--output", "json").stdout)
        return parsed

    def items(self, kind: str) -> list[Obj]:
        found: list[Obj] = self.get(kind)["items"]
        return found


def ready(pod: Obj) -> bool:
    """Ready and not on its way out: what a PodDisruptionBudget counts as healthy."""
    if pod["metadata"].get("deletionTimestamp"):
        return False
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def wait_until(what: str, check: Callable[[], bool], limit_s: float = 120.0) -> None:
    deadline = time.monotonic() + limit_s
    while not check():
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {limit_s:g} s: {what}")
        time.sleep(0.5)


Measure = Callable[[Mapping[str, Obj]], Mapping[str, int]]


@dataclass
class PodWatch:
    """`kubectl get pods --watch`: after the initial list, each event updates the pods known and
    `measure` runs on them; the lowest and highest value of each of its keys are kept."""

    kubectl: Kubectl
    measure: Measure
    pods: dict[str, Obj] = field(default_factory=dict)
    lowest: dict[str, int] = field(default_factory=dict)
    highest: dict[str, int] = field(default_factory=dict)
    events: int = 0
    _synced: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _process: subprocess.Popen[str] | None = None
    _reader: threading.Thread | None = None

    def __enter__(self) -> PodWatch:
        initial = {p["metadata"]["name"] for p in self.kubectl.items("pods")}
        self._process = subprocess.Popen(
            [
                self.kubectl.binary,
                "--namespace",
                self.kubectl.namespace,
                "get",
                "pods",
                "--watch",
                "--output-watch-events",
                "--output",
                "json",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, args=(initial,), daemon=True)
        self._reader.start()
        if not self._synced.wait(30):
            self.__exit__(None, None, None)
            raise AssertionError("the pod watch did not list the namespace's pods in 30 s")
        return self

    def __exit__(self, *_: object) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)
        if self._reader is not None:
            self._reader.join(timeout=10)

    def _read(self, initial: set[str]) -> None:
        assert self._process is not None and self._process.stdout is not None
        decoder, buffer = json.JSONDecoder(), ""
        for line in self._process.stdout:
            buffer += line
            try:
                event, end = decoder.raw_decode(buffer.lstrip())
            except json.JSONDecodeError:
                continue  # the object is not complete yet
            buffer = buffer.lstrip()[end:]
            with self._lock:
                self._apply(event)
                if not self._synced.is_set() and initial <= set(self.pods):
                    self._synced.set()
                if self._synced.is_set():
                    self._record()

    def now(self) -> Mapping[str, int]:
        """The measure of the pods as the last event left them."""
        with self._lock:
            return self.measure(dict(self.pods))

    def _apply(self, event: Obj) -> None:
        pod = event["object"]
        name = pod["metadata"]["name"]
        if event["type"] == "DELETED":
            self.pods.pop(name, None)
        else:
            self.pods[name] = pod

    def _record(self) -> None:
        self.events += 1
        for key, value in self.measure(self.pods).items():
            self.lowest[key] = min(value, self.lowest.get(key, value))
            self.highest[key] = max(value, self.highest.get(key, value))
