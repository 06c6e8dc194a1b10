"""The mesh's shape in one place: services, their default ports, and the edges between them.

Everything that names a port or an edge (the launcher, the embedded Toxiproxy wiring,
deploy/toxiproxy.json, .env, docker-compose.yml, the k8s manifests) agrees with this module;
tests/unit/deploy/test_deploy_agreement.py proves it.

Replicas: profile and recommendation run as REPLICAS[name] copies, active-active. Replica 1
keeps the service's name, ports and proxy names (so `mesh restart profile`, the edge
`gateway_to_profile` and its proxy mean what they always did); replica k > 1 is `<name>-k`,
every port shifted by REPLICA_PORT_STEP * (k - 1), and each edge to it has its own proxy
`<edge>-k`. A fault on an edge applies to every replica's proxy; a proxy name breaks one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServiceSpec:
    """One service of the mesh and where it listens by default."""

    name: str
    port: int
    admin_port: int
    metrics_port: int
    module: str
    grpc_service: str
    """The full name of the gRPC service it serves, e.g. mesh.v1.ProfileService."""


@dataclass(frozen=True)
class Edge:
    """An edge: `caller` calls its `dependency`. Its `name` (`<caller>_to_<dependency>`) keys
    the policy's `edges` and names the edge's Toxiproxy proxy (docs/glossary.md)."""

    caller: str
    dependency: str
    proxy_port: int

    @property
    def name(self) -> str:
        return f"{self.caller}_to_{self.dependency}"

    @property
    def addr_env(self) -> str:
        """The variable that tells `caller` where `dependency` is, e.g. PROFILE_ADDR."""
        return f"{self.dependency.upper()}_ADDR"


GATEWAY = ServiceSpec(
    "gateway", 50051, 50151, 9464, "grpc_resilience_mesh.services.gateway", "mesh.v1.Gateway"
)
PROFILE = ServiceSpec(
    "profile", 50052, 50152, 9465, "grpc_resilience_mesh.services.profile", "mesh.v1.ProfileService"
)
RECOMMENDATION = ServiceSpec(
    "recommendation",
    50053,
    50153,
    9466,
    "grpc_resilience_mesh.services.recommendation",
    "mesh.v1.RecommendationService",
)
PAYMENT = ServiceSpec(
    "payment", 50054, 50154, 9467, "grpc_resilience_mesh.services.payment", "mesh.v1.PaymentService"
)
NOTIFICATION = ServiceSpec(
    "notification",
    50055,
    50155,
    9468,
    "grpc_resilience_mesh.services.notification",
    "grpc.health.v1.Health",
)
"""The receipt worker: a BullMQ consumer; its gRPC port serves health only."""

SERVICES: tuple[ServiceSpec, ...] = (PROFILE, RECOMMENDATION, PAYMENT, NOTIFICATION, GATEWAY)
"""In start-up order: dependencies before their callers."""

REDIS = ServiceSpec("redis", 6390, 0, 0, "", "")
SMTP = ServiceSpec("smtp", 2525, 0, 0, "", "")
PEERS: tuple[ServiceSpec, ...] = (REDIS, SMTP)
"""Third-party peers (not gRPC: no admin or metrics port, no module), started before Toxiproxy.
Redis holds the receipt queue; SMTP is where receipts go (a local sink, Mailpit in compose)."""

EDGES: tuple[Edge, ...] = (
    Edge("gateway", "payment", 26054),
    Edge("gateway", "profile", 26052),
    Edge("gateway", "recommendation", 26053),
    Edge("recommendation", "profile", 26152),
    Edge("payment", "redis", 26390),
    Edge("notification", "redis", 26391),
    Edge("notification", "smtp", 26525),
)

TOXIPROXY_API_PORT = 8474

EMBEDDED_PORT_SHIFT = 30_000
"""`mesh up` binds each gRPC and admin port this much lower than the ports above (gateway
20051, profile-2 20062), which containers keep. Linux lends 32768-60999 to outgoing connections
as source ports, so a default in that range fails now and then with `address already in use`
while a neighbour's connection holds it; every other default (metrics 94xx, proxies 26xxx, the
Toxiproxy API, the peers) already sits below the range."""


def embedded_port(port: int) -> int:
    """Where the embedded mesh binds a service's port: 50051 -> 20051; lower ports as given."""
    return port - EMBEDDED_PORT_SHIFT if port > EMBEDDED_PORT_SHIFT else port


REPLICAS: dict[str, int] = {"profile": 2, "recommendation": 2}
"""How many copies of a service run (absent: one). Payment stays one: its ledger is one
SQLite file, a single writer; its failover is a restart (docs/patterns/replicas.md)."""
REPLICA_PORT_STEP = 10
"""Replica k listens on the service's ports + 10 * (k - 1) (profile-2: 50062, 50162, 9475)."""


@dataclass(frozen=True)
class ReplicaProxy:
    """One Toxiproxy proxy of an edge: the edge's calls to one replica of its dependency."""

    name: str
    """The edge's name for replica 1, `<edge>-k` for replica k."""
    port: int
    upstream: ServiceSpec
    """The replica it forwards to."""


def replicas(name: str) -> tuple[ServiceSpec, ...]:
    """Every copy of service `name`, replica 1 (the service itself) first."""
    base = service(name)
    count = REPLICAS.get(base.name, 1)
    step = REPLICA_PORT_STEP
    return (
        base,
        *(
            ServiceSpec(
                f"{base.name}-{k}",
                base.port + step * (k - 1),
                base.admin_port + step * (k - 1),
                base.metrics_port + step * (k - 1),
                base.module,
                base.grpc_service,
            )
            for k in range(2, count + 1)
        ),
    )


def replica_of(name: str) -> str:
    """The service a process name belongs to: `profile-2` -> `profile`; other names as given."""
    base, _, k = name.rpartition("-")
    return base if base in REPLICAS and k.isdigit() else name


def edge_proxies(e: Edge) -> tuple[ReplicaProxy, ...]:
    """The proxies of edge `e`, one per replica of its dependency (one for most edges)."""
    specs = replicas(e.dependency) if e.dependency in REPLICAS else (service(e.dependency),)
    return tuple(
        ReplicaProxy(
            e.name if k == 0 else f"{e.name}-{k + 1}",
            e.proxy_port + REPLICA_PORT_STEP * k,
            spec,
        )
        for k, spec in enumerate(specs)
    )


def service(name: str) -> ServiceSpec:
    """A service, a replica (`profile-2`) or a peer by name."""
    for spec in (*SERVICES, *PEERS):
        if spec.name == name:
            return spec
    base = replica_of(name)
    if base != name:
        for spec in replicas(base):
            if spec.name == name:
                return spec
    known = ", ".join(s.name for s in (*SERVICES, *PEERS))
    raise KeyError(f"unknown service {name!r}; known: {known}")


def edges_from(caller: str) -> tuple[Edge, ...]:
    return tuple(e for e in EDGES if e.caller == caller)


def edge(name: str) -> Edge:
    for e in EDGES:
        if e.name == name:
            return e
    raise KeyError(f"unknown edge {name!r}; known: {', '.join(e.name for e in EDGES)}")


XDS_CALLERS = ("gateway", "recommendation")
"""The services whose channels are xds:/// targets under `mesh up --xds`."""


def xds_edges() -> tuple[Edge, ...]:
    """The edges those services dial through xDS."""
    return tuple(e for e in EDGES if e.caller in XDS_CALLERS)


INSTANCES: tuple[ServiceSpec, ...] = tuple(r for s in SERVICES for r in replicas(s.name))
"""Every process of a service (each replica), in start-up order."""

PROXIES: tuple[ReplicaProxy, ...] = tuple(p for e in EDGES for p in edge_proxies(e))
"""Every Toxiproxy proxy: one per edge and replica of its dependency."""
