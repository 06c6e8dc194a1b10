"""A flood of handshaken, idle HTTP/2 connections on the gateway's public port: from one source
address (past MAX_CONNECTIONS_PER_PEER), and from many (past MAX_CONNECTIONS). Either way a new
client from 127.0.0.1 is answered: the relay closes the flood's longest silent connections
rather than refusing the newcomer (grpc_resilience_mesh.services.runtime.front)."""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import grpc
import grpc.aio

from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc
from tests.integration.hardening.inproc_services import serving
from tests.support.front_door import bearer

KEY = "flood-test-key"
CALLS = 15
FLOODER = """
import asyncio, resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sources, parallel = sys.argv[4].split(","), int(sys.argv[5])
HELLO = b"PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n" + bytes(3) + bytes([4, 0]) + bytes(4)
ACK = bytes(3) + bytes([4, 1]) + bytes(4)

async def handshake(i, gate, held):
    async with gate:
        try:
            reader, writer = await asyncio.open_connection(
                host, port, local_addr=(sources[i % len(sources)], 0))
            writer.write(HELLO)
            head = await asyncio.wait_for(reader.readexactly(9), 10)
            await asyncio.wait_for(reader.readexactly(int.from_bytes(head[:3], "big")), 10)
            writer.write(ACK)
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            return 0
        held.append(writer)
        return 1

async def main():
    gate, held = asyncio.Semaphore(parallel), []
    done = await asyncio.gather(*(handshake(i, gate, held) for i in range(count)))
    print(sum(done), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""
"""Opens `count` connections to host:port, `parallel` at a time, from the source addresses given
round-robin; each sends the preface and SETTINGS, reads the server's SETTINGS and ACKs them, then
stays silent. Prints how many finished that handshake and holds them until its stdin closes."""


@asynccontextmanager
async def flood(
    addr: str, count: int, sources: Sequence[str], parallel: int = 200
) -> AsyncIterator[int]:
    """`count` handshaken connections to `addr` from `sources`; yields how many handshook."""
    host, _, port = addr.rpartition(":")
    flooder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", FLOODER, host, port, str(count), ",".join(sources), str(parallel),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert flooder.stdin is not None and flooder.stdout is not None
    try:
        line = await asyncio.wait_for(flooder.stdout.readline(), timeout=120)
        yield int(line)
    finally:
        flooder.stdin.close()
        try:
            await asyncio.wait_for(flooder.wait(), timeout=20)
        except TimeoutError:
            flooder.kill()
            await flooder.wait()


async def new_client_calls(addr: str) -> Counter[str]:
    """CALLS GetHome on a new channel from 127.0.0.1, by status code."""
    codes: Counter[str] = Counter()
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = gateway_pb2_grpc.GatewayStub(channel)
        for _ in range(CALLS):
            try:
                await stub.GetHome(
                    gateway_pb2.GetHomeRequest(user_id="u-0001", limit=3),
                    timeout=5,
                    metadata=bearer(KEY),
                )
                codes["OK"] += 1
            except grpc.aio.AioRpcError as err:
                codes[err.code().name] += 1
    return codes


async def test_a_flood_from_one_address_leaves_a_new_client_answered() -> None:
    async with serving(env={"MESH_API_KEYS": KEY, "HANDSHAKE_TIMEOUT_S": "60"}) as served:
        addr = served.listen["gateway"]
        async with flood(addr, 4200, ["127.0.0.2"]) as handshaken:
            codes = await new_client_calls(addr)
    print(f"{handshaken} of 4200 handshaken from 127.0.0.2; new client: {dict(codes)}")
    assert handshaken >= 4096, "the flood reached the old cap (MAX_CONNECTIONS, 4096)"
    assert codes == Counter(OK=CALLS)


async def test_a_flood_from_many_addresses_past_the_cap_leaves_a_new_client_answered() -> None:
    env = {"MESH_API_KEYS": KEY, "MAX_CONNECTIONS": "40", "HANDSHAKE_TIMEOUT_S": "60"}
    sources = [f"127.0.0.{i}" for i in range(2, 62)]
    async with serving(env=env) as served:
        addr = served.listen["gateway"]
        # a few at a time: past the cap the relay closes the longest silent connection, and a
        # flood all at once has most of its own still mid-handshake (those it closes first)
        async with flood(addr, 120, sources, parallel=8) as handshaken:
            codes = await new_client_calls(addr)
    print(f"{handshaken} of 120 handshaken from 60 addresses; new client: {dict(codes)}")
    assert handshaken >= 40, "the flood filled the cap"
    assert codes == Counter(OK=CALLS)


WINDOW_UPDATE = bytes([0, 0, 4, 8, 0]) + bytes(4) + (1).to_bytes(4, "big")
"""A frame that keeps a connection talking without a call (PINGs would do it too, but grpc
core closes a connection after three PINGs without data: too_many_pings)."""
HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0]) + bytes(4)
SETTINGS_ACK = bytes([0, 0, 0, 4, 1]) + bytes(4)


async def _talking_until_closed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A WINDOW_UPDATE every 0.2 s until the server ends the connection."""
    while not reader.at_eof():
        writer.write(WINDOW_UPDATE)
        try:
            while await asyncio.wait_for(reader.read(1 << 16), 0.2):
                pass
        except TimeoutError:
            continue
        except ConnectionError:
            return


async def test_a_connection_that_carries_no_call_is_closed_however_it_talks() -> None:
    env = {"MESH_API_KEYS": KEY, "CONNECTION_IDLE_TIMEOUT_S": "1"}
    async with serving(("gateway",), env=env) as served:
        host, _, port = served.listen["gateway"].rpartition(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            writer.write(HELLO)
            head = await asyncio.wait_for(reader.readexactly(9), 5)
            await reader.readexactly(int.from_bytes(head[:3], "big"))
            writer.write(SETTINGS_ACK)
            started = time.monotonic()
            await asyncio.wait_for(_talking_until_closed(reader, writer), 8)
            closed_after_s = time.monotonic() - started
        finally:
            writer.close()
    print(f"closed after {closed_after_s:.2f} s")
    assert closed_after_s < 6
