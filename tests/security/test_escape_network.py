"""Escape attempts over the network: loopback services on the host, DNS, external addresses.

The host services listen on 127.0.0.1/::1 (and one abstract unix socket) only, count every
contact, and stop by themselves after `SERVER_LIFETIME_S`.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from docket.sandboxes.bwrap.config import BwrapConfig
from tests.sandboxes.bwrap_support import bwrap_sandbox, requires_bwrap

pytestmark = requires_bwrap

SERVER_LIFETIME_S = 30.0
LIMITS = BwrapConfig(memory_mb=256, max_processes=16, max_file_size_mb=1)
NETNS = "network namespace with loopback only (--unshare-net)"
TEST_NET = "203.0.113.1"  # RFC 5737 TEST-NET-3: never routed


@dataclass
class HostServices:
    """Loopback listeners on the host and the contacts each received."""

    tcp_port: int
    tcp6_port: int
    udp_port: int
    dns_port: int
    abstract: str
    contacts: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)


def _serve(sock: socket.socket, name: str, services: HostServices, deadline: float) -> None:
    sock.settimeout(0.2)
    with sock:
        while time.monotonic() < deadline and not services.stop.is_set():
            try:
                if sock.type == socket.SOCK_DGRAM:
                    data, peer = sock.recvfrom(512)
                    sock.sendto(b"reply:" + data[:32], peer)
                else:
                    conn, _ = sock.accept()
                    conn.close()
            except OSError:  # timeout: look at the deadline again
                continue
            services.contacts.append(name)


@pytest.fixture
def host_services() -> Iterator[HostServices]:
    sockets = {
        "tcp": socket.socket(socket.AF_INET, socket.SOCK_STREAM),
        "tcp6": socket.socket(socket.AF_INET6, socket.SOCK_STREAM),
        "udp": socket.socket(socket.AF_INET, socket.SOCK_DGRAM),
        "dns": socket.socket(socket.AF_INET, socket.SOCK_DGRAM),
        "unix": socket.socket(socket.AF_UNIX, socket.SOCK_STREAM),
    }
    abstract = f"docket-escape-{uuid.uuid4().hex[:10]}"
    for name, sock in sockets.items():
        if name == "unix":
            sock.bind("\0" + abstract)
        else:
            sock.bind(("::1" if name == "tcp6" else "127.0.0.1", 0))
        if sock.type == socket.SOCK_STREAM:
            sock.listen(8)
    services = HostServices(
        tcp_port=sockets["tcp"].getsockname()[1],
        tcp6_port=sockets["tcp6"].getsockname()[1],
        udp_port=sockets["udp"].getsockname()[1],
        dns_port=sockets["dns"].getsockname()[1],
        abstract=abstract,
    )
    deadline = time.monotonic() + SERVER_LIFETIME_S
    threads = [
        threading.Thread(target=_serve, args=(sock, name, services, deadline), daemon=True)
        for name, sock in sockets.items()
    ]
    for thread in threads:
        thread.start()
    yield services
    services.stop.set()
    for thread in threads:
        thread.join(timeout=SERVER_LIFETIME_S)


#: Python run inside the sandbox: one attempt, printing JSON {"ok": bool, "detail": str, "s": t}.
ATTEMPT = """
import json, socket, sys, time
kind, arg = sys.argv[1], sys.argv[2]
start = time.monotonic()
def done(ok, detail):
    print(json.dumps({"ok": ok, "detail": detail, "s": time.monotonic() - start}))
    sys.exit(0)
try:
    if kind in ("tcp", "tcp6"):
        host = "::1" if kind == "tcp6" else ("127.0.0.1" if arg.isdigit() else arg.split(":")[0])
        port = int(arg.split(":")[-1])
        s = socket.socket(socket.AF_INET6 if kind == "tcp6" else socket.AF_INET)
        s.settimeout(3)
        s.connect((host, port))
        done(True, "connected")
    if kind in ("udp", "dns"):
        host, port = arg.rsplit(":", 1)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(1)
        query = bytes.fromhex("abcd01000001000000000000076578616d706c6503636f6d0000010001")
        s.sendto(query if kind == "dns" else b"hello", (host, int(port)))
        done(True, "reply " + s.recvfrom(512)[0].hex())
    if kind == "resolve":
        done(True, str(socket.getaddrinfo(arg, 80)))
    if kind == "unix":
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(3)
        s.connect("\\0" + arg)
        done(True, "connected")
except (OSError, socket.gaierror) as ex:
    done(False, f"{type(ex).__name__}: {ex}")
"""


@dataclass(frozen=True)
class Attempt:
    kind: str
    target: str  # formatted with the host services' fields


ATTEMPTS = [
    pytest.param(
        Attempt("tcp", "{tcp_port}"),
        marks=pytest.mark.escape("TCP to a host loopback service (127.0.0.1)", NETNS),
        id="tcp-loopback",
    ),
    pytest.param(
        Attempt("tcp6", "{tcp6_port}"),
        marks=pytest.mark.escape("TCP to a host loopback service (::1)", NETNS),
        id="tcp6-loopback",
    ),
    pytest.param(
        Attempt("udp", "127.0.0.1:{udp_port}"),
        marks=pytest.mark.escape("UDP to a host loopback service", NETNS),
        id="udp-loopback",
    ),
    pytest.param(
        Attempt("dns", "127.0.0.1:{dns_port}"),
        marks=pytest.mark.escape("DNS query to a host loopback resolver", NETNS),
        id="dns-loopback",
    ),
    pytest.param(
        Attempt("unix", "{abstract}"),
        marks=pytest.mark.escape(
            "Connect to a host abstract unix socket", "abstract sockets are per network namespace"
        ),
        id="abstract-unix",
    ),
    pytest.param(
        Attempt("tcp", TEST_NET + ":80"),
        marks=pytest.mark.escape(f"TCP to an external address ({TEST_NET})", NETNS + ": no route"),
        id="tcp-external",
    ),
    pytest.param(
        Attempt("dns", TEST_NET + ":53"),
        marks=pytest.mark.escape(f"DNS/UDP to an external resolver ({TEST_NET})", NETNS),
        id="dns-external",
    ),
    pytest.param(
        Attempt("resolve", "example.com"),
        marks=pytest.mark.escape(
            "Resolve a public name", NETNS + "; no resolv.conf, hosts: files only"
        ),
        id="resolve",
    ),
]


@pytest.mark.parametrize("attempt", ATTEMPTS)
async def test_network_is_unreachable(host_services: HostServices, attempt: Attempt) -> None:
    target = attempt.target.format(**vars(host_services))
    if attempt.kind in ("tcp", "tcp6", "udp", "dns", "unix") and "203.0" not in target:
        _check_service_answers_the_host(attempt.kind, target)
        assert host_services.contacts == [attempt.kind], "the host's own attempt was not counted"
        host_services.contacts.clear()
    async with bwrap_sandbox(LIMITS) as sb:
        result = await sb.exec(["python3", "-c", ATTEMPT, attempt.kind, target], timeout=30)
    outcome = json.loads(result.stdout)
    assert outcome["ok"] is False, outcome
    assert outcome["s"] < 1.5, outcome  # refused or unreachable at once (UDP waits 1 s)
    assert host_services.contacts == []


def _check_service_answers_the_host(kind: str, target: str) -> None:
    """The service is up: the same attempt from the host gets through."""
    if kind == "unix":
        with socket.socket(socket.AF_UNIX) as s:
            s.connect("\0" + target)
    elif kind in ("tcp", "tcp6"):
        host = "::1" if kind == "tcp6" else "127.0.0.1"
        socket.create_connection((host, int(target)), timeout=3).close()
    else:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(3)
            host, port = target.rsplit(":", 1)
            s.sendto(b"ping", (host, int(port)))
            assert s.recvfrom(512)[0] == b"reply:ping"
    time.sleep(0.3)  # the server thread counts it
