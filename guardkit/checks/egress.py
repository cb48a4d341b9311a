"""Egress checks: parse a URL as strictly as any HTTP client would, resolve it, check every address.

Parsers disagree about userinfo and backslashes (``http://evil\\@good/`` is ``good`` to urllib and
httpx, ``evil`` to urllib3), so such URLs are refused outright rather than parsed one way.
Non-ASCII hosts are mapped with IDNA 2008 and UTS 46, as httpx and requests map them, and refused
where IDNA 2003 (urllib's) would name another host (``guardkit.checks.hosts``). Numeric hosts
are parsed with ``inet_aton``, the parser ``getaddrinfo`` uses, so ``2130706433``, ``0x7f.1`` and
``0177.0.0.1`` are all seen as 127.0.0.1. Names go through the resolver (a parameter,
``socket.getaddrinfo`` by default) and every address it returns is checked
(``guardkit.checks.addresses``). DNS can answer differently at connect time (rebinding): the
runtime hook re-checks the address the socket actually connects to.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from guardkit.checks._rules import as_strings
from guardkit.checks.addresses import IPAddress, forbidden_category, format_address, parse_literal
from guardkit.checks.hosts import allow_entry, ascii_host, host_matches
from guardkit.decisions import Denial, DenyCode
from guardkit.errors import PolicyError

__all__ = ["EgressRule", "Resolver", "check_url", "lookup_name", "resolve_host", "url_host"]

#: ``getaddrinfo``'s shape; inject a stub in tests (no network).
Resolver = Callable[..., list[tuple[Any, ...]]]
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True, kw_only=True)
class EgressRule:
    """Where a URL argument may point.

    >>> EgressRule(allow_hosts=["api.github.com", "*.example.com"], allow_ports=[443])
    """

    #: Host names (``*.example.com`` for subdomains) or addresses (``[2001:db8::1]`` as copied
    #: from a URL works too); empty allows any host that passes the address checks.
    allow_hosts: Sequence[str] = ()
    allow_ports: Sequence[int] = (80, 443)
    #: Refuse loopback, private, link-local, metadata, CGNAT, multicast and reserved addresses.
    deny_private: bool = True
    #: Networks (CIDR) allowed even when ``deny_private`` would refuse them.
    allow_networks: Sequence[str] = ()
    schemes: Sequence[str] = ("http", "https")
    #: How names are resolved.
    resolver: Resolver = socket.getaddrinfo

    def __post_init__(self) -> None:
        for name in ("allow_hosts", "allow_networks", "schemes"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise TypeError(f"EgressRule.{name} is a list of strings, not one string")
            object.__setattr__(self, name, tuple(value))
        object.__setattr__(self, "allow_hosts", tuple(allow_entry(h) for h in self.allow_hosts))
        object.__setattr__(self, "allow_ports", tuple(int(port) for port in self.allow_ports))
        for network in self.allow_networks:
            ipaddress.ip_network(network, strict=False)

    @classmethod
    def from_policy(cls, data: Any, where: str) -> EgressRule:
        """Read ``egress.<arg>`` from a policy's tool section."""
        if not isinstance(data, Mapping):
            raise PolicyError([(where, "must be a table/object")])
        unknown = set(data) - {
            "allow_hosts",
            "allow_ports",
            "deny_private",
            "allow_networks",
            "schemes",
        }
        if unknown:
            raise PolicyError([(f"{where}.{sorted(unknown)[0]}", "unknown field")])
        ports = data.get("allow_ports", [80, 443])
        if not isinstance(ports, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) and 0 < p < 65536 for p in ports
        ):
            raise PolicyError([(f"{where}.allow_ports", "must be a list of port numbers")])
        deny_private = data.get("deny_private", True)
        if not isinstance(deny_private, bool):
            raise PolicyError([(f"{where}.deny_private", "must be true or false")])
        try:
            return cls(
                allow_hosts=as_strings(data.get("allow_hosts", ()), f"{where}.allow_hosts"),
                allow_ports=tuple(ports),
                deny_private=deny_private,
                allow_networks=as_strings(
                    data.get("allow_networks", ()), f"{where}.allow_networks"
                ),
                schemes=as_strings(data.get("schemes", ("http", "https")), f"{where}.schemes"),
            )
        except ValueError as exc:
            field = "allow_hosts" if "allow_hosts" in str(exc) else "allow_networks"
            raise PolicyError([(f"{where}.{field}", str(exc))]) from exc

    def address_problem(self, address: IPAddress) -> str | None:
        """Why this rule refuses a resolved address, or None."""
        if any(address in ipaddress.ip_network(net, strict=False) for net in self.allow_networks):
            return None
        category = forbidden_category(address) if self.deny_private else None
        return None if category is None else f"{format_address(address)} is {category}"

    def host_allowed(self, host: str) -> bool:
        """Whether a normalised host (``ascii_host``, or an address) is allowed."""
        return not self.allow_hosts or host_matches(host, tuple(self.allow_hosts))


def _host_of(url: str, rule: EgressRule) -> tuple[str, int]:
    """The normalised host and port the client will connect to; ValueError for anything murky."""
    if any(ord(ch) <= 0x20 or ord(ch) == 0x7F for ch in url) or "\\" in url:
        raise ValueError("control characters, spaces or backslashes in the URL")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in rule.schemes:
        raise ValueError(f"scheme {scheme or '(none)'!r} is not allowed")
    if "@" in parts.netloc:
        raise ValueError("userinfo in the URL (parsers disagree about where the host starts)")
    host = parts.hostname
    if not host:
        raise ValueError("no host")
    port = parts.port if parts.port is not None else _DEFAULT_PORTS.get(scheme)
    if port is None:
        raise ValueError("no port")
    if parts.netloc.rsplit(":", 1)[0].startswith("["):
        return host.split("%", 1)[0], port
    host = ascii_host(host)
    if not host or any(not (ch.isalnum() or ch in "-._") for ch in host):
        raise ValueError(f"host {host!r} is not a valid name")
    return host, port


def url_host(url: str, schemes: tuple[str, ...] = ("http", "https")) -> str:
    """The normalised host an HTTP client connects to for ``url``; ValueError for anything murky.

    What policy rules match (``x-url-host``): parsed as ``check_url`` parses, without resolving.
    """
    return _host_of(url, EgressRule(schemes=schemes))[0]


def lookup_name(host: Any) -> str | None:
    """The name a ``getaddrinfo``/``gethostbyname`` call sends to the resolver, or None.

    CPython encodes a ``str`` host with its IDNA 2003 codec, so that is the name looked up.
    """
    try:
        raw = host if isinstance(host, bytes) else str(host).encode("idna")
        return raw.decode("ascii").lower().rstrip(".")
    except UnicodeError:
        return None


def resolve_host(host: str, port: int, resolver: Resolver) -> list[IPAddress]:
    """Every address the OS would connect to for ``host``."""
    literal = parse_literal(host)
    if literal is not None:
        return [literal]
    infos = resolver(host, port, type=socket.SOCK_STREAM)
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    if not addresses:
        raise OSError(f"{host} did not resolve")
    return addresses


def check_url(argument: str, value: Any, rule: EgressRule, record: dict[str, Any]) -> Denial | None:
    """Check one URL argument; records the host and resolved addresses in ``record``."""

    def deny(why: str) -> Denial:
        return Denial(
            reason={"code": DenyCode.EGRESS_DENIED.value, "argument": argument, "message": why}
        )

    if not isinstance(value, str):
        return deny(f"expected a URL string, got {type(value).__name__}")
    try:
        host, port = _host_of(value, rule)
    except ValueError as exc:
        return deny(f"{value!r}: {exc}")
    if not rule.host_allowed(host):
        return deny(f"host {host!r} is not in the allowed hosts")
    if port not in rule.allow_ports:
        return deny(f"port {port} is not allowed")
    try:
        addresses = resolve_host(host, port, rule.resolver)
    except (OSError, ValueError, UnicodeError) as exc:
        # The world failed, not the agent: its own code, and no scar.
        return Denial(
            reason={
                "code": DenyCode.EGRESS_UNRESOLVED.value,
                "argument": argument,
                "message": f"{host!r} does not resolve: {exc}",
            },
            severity=None,
        )
    for address in addresses:
        why = rule.address_problem(address)
        if why is not None:
            return deny(f"{host!r} resolves to {why}")
    record[argument] = {
        "host": host,
        "port": port,
        "addresses": [format_address(a) for a in addresses],
    }
    return None
