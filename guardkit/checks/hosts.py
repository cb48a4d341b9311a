"""Host names as the HTTP clients connect to them, and allow-list entries compared with them.

Clients disagree about non-ASCII names: Python's ``idna`` codec (``urllib``, ``socket``) applies
IDNA 2003, which maps ``faß.de`` to ``fass.de``; httpx, urllib3 and requests apply IDNA 2008 (the
``idna`` package, requests with UTS 46 mapping), which keeps the ß: ``xn--fa-hia.de``, another
domain. A host is checked in its IDNA 2008 + UTS 46 form (full-width letters and ideographic dots
map to ASCII first), and refused when any conversion a client might apply gives a different
name, so the host checked is the host connected to whatever the tool uses.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

import idna

from guardkit.checks.addresses import IPAddress, format_address, parse_literal

__all__ = ["allow_entry", "ascii_host", "host_matches"]


def _forms(host: str) -> set[str]:
    """What each client's conversion makes of ``host`` (those that accept it)."""
    conversions: tuple[Callable[[], bytes], ...] = (
        lambda: idna.encode(host, uts46=True, transitional=False),  # requests
        lambda: idna.encode(host.lower()),  # httpx, urllib3
        lambda: host.encode("idna"),  # urllib, http.client, socket
    )
    forms: set[str] = set()
    for convert in conversions:
        try:
            forms.add(convert().decode("ascii").lower().rstrip("."))
        except UnicodeError:  # idna.IDNAError is one
            continue
    return forms


def ascii_host(host: str) -> str:
    """The ASCII (A-label) host a client connects to; ValueError if clients would disagree.

    >>> ascii_host("Bücher.de")
    'xn--bcher-kva.de'
    """
    if host.isascii():
        return host.lower().rstrip(".")
    try:
        checked = idna.encode(host, uts46=True, transitional=False).decode("ascii")
    except UnicodeError as exc:
        raise ValueError(f"host {host!r} is not a valid IDNA 2008 name ({exc})") from None
    forms = _forms(host)
    if len(forms) > 1:
        raise ValueError(
            f"host {host!r} names different hosts depending on the client "
            f"({', '.join(sorted(forms))}: IDNA 2003 and 2008 disagree)"
        )
    return checked.lower().rstrip(".")


def allow_entry(entry: Any) -> str:
    """One ``allow_hosts`` entry in the form hosts are compared in; ValueError if unusable.

    ``[2606:2800::1]`` (the bracketed form copied from a URL) and ``2606:2800::1`` are the same
    address; names are lower-cased and IDNA-mapped; ``*.example.com`` keeps its wildcard.
    """
    if not isinstance(entry, str) or not entry:
        raise ValueError(f"allow_hosts entries are host names or addresses, got {entry!r}")
    text = entry
    if text.startswith("[") and text.endswith("]"):
        try:
            return format_address(ipaddress.IPv6Address(text[1:-1]))
        except ValueError:
            raise ValueError(
                f"allow_hosts entry {entry!r}: brackets must hold an IPv6 address"
            ) from None
    literal = parse_literal(text)
    if literal is not None:
        return format_address(literal)
    wildcard = text.startswith("*.")
    name = text[2:] if wildcard else text
    if not name or any(ch in name for ch in "/:@[]*\\ ") or any(ord(ch) < 0x21 for ch in name):
        raise ValueError(
            f"allow_hosts entry {entry!r} is not a host name: write the host alone "
            "(no scheme, port or path), '*.example.com' for subdomains, or an address"
        )
    return ("*." if wildcard else "") + ascii_host(name)


def _same_address(host: IPAddress, entry: str) -> bool:
    # By value: "2606:2800::1" and "2606:2800:0:0::1" are one address; zone ids don't count.
    other = parse_literal(entry)
    return other is not None and (other.version, int(other)) == (host.version, int(host))


def host_matches(host: str, entries: tuple[str, ...]) -> bool:
    """Whether normalised ``host`` is one of ``allow_entry``-normalised ``entries``."""
    literal = parse_literal(host)
    if literal is not None:
        return any(_same_address(literal, entry) for entry in entries)
    return any(
        host == entry or (entry.startswith("*.") and host.endswith(entry[1:])) for entry in entries
    )
