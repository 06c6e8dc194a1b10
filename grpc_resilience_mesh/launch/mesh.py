"""Start the mesh as local processes (services behind the embedded Toxiproxy) and stop it.

Used by `mesh up`, the experiment runner and the end-to-end tests. Every process it starts it also
stops, by PID, on every exit path. One mesh per state dir (grpc_resilience_mesh.launch.state_lock);
its mesh.json (which holds the API key) is written owner-only. A restarted process keeps its ports
and the current policy, and its log is appended to. Nothing here restarts a process on its own:
`mesh up` adds that (grpc_resilience_mesh.launch.supervisor), the experiment runner does not.

`Mesh` is the facade; its parts, one concern each:
- grpc_resilience_mesh.launch.lifecycle: starting and stopping the processes, and writing mesh.json;
- grpc_resilience_mesh.launch.wiring: each process's environment and command, the key and
  certificates;
- grpc_resilience_mesh.launch.spawn: one process with its log file;
- grpc_resilience_mesh.launch.restarts: restarting one process, or every service under another
  policy;
- grpc_resilience_mesh.launch.hooks: what a supervisor watches, and stopping a process on purpose.
"""

from __future__ import annotations

from grpc_resilience_mesh.launch.hooks import MeshHooks
from grpc_resilience_mesh.launch.processes import (
    LaunchError as LaunchError,  # re-exported: callers import it from here
)
from grpc_resilience_mesh.launch.restarts import MeshRestarts


class Mesh(MeshRestarts, MeshHooks):
    """The embedded mesh: toxiproxy (unless direct), the peers and the five services, as processes.

    Thread-safe: starting, stopping, killing and restarting processes hold one lock, so a
    supervisor thread and the caller never act on the same process at once.
    """
