"""Start the mesh as local processes (services behind the embedded Toxiproxy) and stop it.

Used by `mesh up`, the experiment runner and the end-to-end tests. Every process it starts
it also stops, by PID, on every exit path. One mesh per state dir (chaos.launch.state_lock); its
mesh.json (which holds the API key) is written owner-only. A restarted process keeps its
ports and the current policy, and its log is appended to. Nothing here restarts a process
on its own: `mesh up` adds that (chaos.launch.supervisor), the experiment runner does not.

`Mesh` is the facade; its parts, one concern each:
- chaos.launch.lifecycle: starting and stopping the processes, and writing mesh.json;
- chaos.launch.wiring: each process's environment and command, the key and certificates;
- chaos.launch.spawn: one process with its log file;
- chaos.launch.restarts: restarting one process, or every service under another policy;
- chaos.launch.hooks: what a supervisor watches, and stopping a process on purpose.
"""

from __future__ import annotations

from chaos.launch.hooks import MeshHooks
from chaos.launch.processes import (
    LaunchError as LaunchError,  # re-exported: callers import it from here
)
from chaos.launch.restarts import MeshRestarts


class Mesh(MeshRestarts, MeshHooks):
    """The embedded mesh: toxiproxy (unless direct) and the four services, as processes.

    Thread-safe: starting, stopping, killing and restarting processes hold one lock, so a
    supervisor thread and the caller never act on the same process at once.
    """
