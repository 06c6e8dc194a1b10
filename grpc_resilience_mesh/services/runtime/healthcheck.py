"""`python -m grpc_resilience_mesh.services.runtime.healthcheck HOST:PORT [SERVICE]`: exit 0 when
SERVING, else 1.

The container health check of docker-compose.yml (Kubernetes uses its native gRPC probe).
"""

from __future__ import annotations

import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def check(addr: str, service: str = "", timeout_s: float = 2.0) -> bool:
    with grpc.insecure_channel(addr) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout_s
            )
        except grpc.RpcError as err:
            print(f"{addr}: {err.code().name}", file=sys.stderr)
            return False
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    print(f"{addr}: {status}")
    serving: bool = reply.status == health_pb2.HealthCheckResponse.SERVING
    return serving


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print(__doc__, file=sys.stderr)
        return 2
    return 0 if check(argv[0], argv[1] if len(argv) > 1 else "") else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
