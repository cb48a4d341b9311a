"""Which IP addresses a tool may not reach by default, with IPv4 hidden in IPv6 unwrapped.

An explicit table rather than ``ipaddress``'s ``is_private``/``is_global``: those answers changed
across patch releases (CVE-2024-4032, gh-117566) and call ``::ffff:127.0.0.1`` not loopback and
6to4/NAT64/IPv4-compatible forms of loopback global on 3.11.
"""

from __future__ import annotations

import ipaddress
import socket

__all__ = ["IPAddress", "embedded_ipv4", "forbidden_category", "format_address", "parse_literal"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# First match wins, so the specific (metadata) entries come before their enclosing ranges.
_TABLE: tuple[tuple[str, str], ...] = (
    ("169.254.169.254/32", "cloud metadata"),
    ("100.100.100.200/32", "cloud metadata"),
    ("fd00:ec2::254/128", "cloud metadata"),
    ("0.0.0.0/8", "unspecified"),
    ("127.0.0.0/8", "loopback"),
    ("10.0.0.0/8", "private"),
    ("172.16.0.0/12", "private"),
    ("192.168.0.0/16", "private"),
    ("100.64.0.0/10", "CGNAT"),
    ("169.254.0.0/16", "link-local"),
    ("192.0.0.0/24", "reserved"),
    ("192.0.2.0/24", "reserved"),
    ("198.18.0.0/15", "reserved"),
    ("198.51.100.0/24", "reserved"),
    ("203.0.113.0/24", "reserved"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("fc00::/7", "private"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "link-local"),
    ("ff00::/8", "multicast"),
    ("100::/64", "reserved"),
    ("2001:db8::/32", "reserved"),
)
_NETWORKS = tuple((ipaddress.ip_network(net), name) for net, name in _TABLE)
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_COMPATIBLE = ipaddress.ip_network("::/96")


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address carries: mapped, compatible, 6to4, NAT64, Teredo."""
    found: list[ipaddress.IPv4Address] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if any(address in net for net in _NAT64):
        found.append(low32)
    if address in _COMPATIBLE and int(address) > 1:
        found.append(low32)
    return found


def forbidden_category(address: IPAddress) -> str | None:
    """``"loopback"``, ``"private"``, ``"cloud metadata"``... or None for a public address."""
    if isinstance(address, ipaddress.IPv6Address):
        address = ipaddress.IPv6Address(int(address))  # drops a zone id
        for inner in embedded_ipv4(address):
            category = forbidden_category(inner)
            if category is not None:
                return f"{category} (as IPv4 embedded in {format_address(address)})"
    for network, name in _NETWORKS:
        if address.version == network.version and address in network:
            return name
    return None


def format_address(address: IPAddress) -> str:
    """The address as text, the same on every Python.

    Python 3.13 writes an IPv4-mapped address as ``::ffff:127.0.0.1`` where 3.11 and 3.12 write
    ``::ffff:7f00:1``; reason texts and the ledger use the dotted form (RFC 5952 §5) everywhere.
    """
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        scope = f"%{address.scope_id}" if address.scope_id else ""
        return f"::ffff:{address.ipv4_mapped}{scope}"
    return str(address)


def parse_literal(host: str) -> IPAddress | None:
    """The address a numeric host names, parsed as the OS does (``inet_aton`` for IPv4)."""
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if host and all(ch in "0123456789abcdefxABCDEFX." for ch in host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None
