"""Chaos Toolkit providers for the gRPC resilience mesh (`python` providers, module
chaosgrpcmesh.*).

- chaosgrpcmesh.probes: gRPC health, the mesh's load generator (its output is the metrics),
  counters read from /metrics, breaker and ejection state, what a run measured so far.
- chaosgrpcmesh.actions: a policy swap on every service (and putting the old one back), app faults
  through the services' FaultAdmin, every fault removed.
- chaosgrpcmesh.tolerances: bounds on a probe's metrics (a `probe` tolerance).
- chaosgrpcmesh.toxiproxy: chaostoxi's toxic and proxy actions sending the mesh's admin token
  (a fault refused stops the run), create_proxy on loopback with the server's own message.
- chaosgrpcmesh.topology: a topology experiment's load, faults on and every fault off, against
  a topology `mesh topology up` holds (found through its state file, `topology_state`).

Every provider finds the mesh in the configuration's `mesh_state` (a mesh.json, as `mesh up`
writes it), else in $MESH_STATE_DIR/mesh.json, else var/mesh.json.
"""

__version__ = "0.1.0"
