"""Egress checks: an adversarial SSRF corpus against a stub resolver (no network at all)."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from typing import Any

import pytest

import guardkit
from guardkit import EgressRule, PolicyError, ToolDenied
from guardkit.checks.addresses import embedded_ipv4, forbidden_category, parse_literal

ZONE = {
    "example.com": ["93.184.216.34"],
    "api.example.com": ["93.184.216.35"],
    "good.com": ["93.184.216.36"],
    "evil.com": ["203.0.113.9"],
    "api.example.org": ["93.184.216.37"],
    "example.com.evil.net": ["93.184.216.38"],
    "evilexample.com": ["93.184.216.39"],
    "localhost": ["127.0.0.1", "::1"],
    "127.0.0.1.nip.io": ["127.0.0.1"],
    "internal.corp": ["10.1.2.3"],
    "rebind.test": ["93.184.216.40", "127.0.0.1"],
    "metadata.google.internal": ["169.254.169.254"],
    "v6only.test": ["::1"],
    "mapped.test": ["::ffff:169.254.169.254"],
    "nat64.test": ["64:ff9b::a00:1"],
    "public6.test": ["2606:4700:4700::1111"],
}


def stub_resolver(host: str, port: Any, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
    """``getaddrinfo`` over ZONE; unknown names fail like NXDOMAIN."""
    if host not in ZONE:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    out = []
    for address in ZONE[host]:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        sockaddr = (address, port, 0, 0) if family == socket.AF_INET6 else (address, port)
        out.append((family, socket.SOCK_STREAM, 6, "", sockaddr))
    return out


DENIED: list[tuple[str, str]] = [
    # IPv4 literals in every form inet_aton accepts
    ("loopback", "http://127.0.0.1/"),
    ("short loopback", "http://127.1/"),
    ("short loopback 3 parts", "http://127.0.1/"),
    ("decimal", "http://2130706433/"),
    ("hex", "http://0x7f000001/"),
    ("octal", "http://0177.0.0.1/"),
    ("hex first octet", "http://0x7f.0.0.1/"),
    ("hex short", "http://0x7f.1/"),
    ("octal whole", "http://017700000001/"),
    ("zero padded", "http://127.000.000.001/"),
    ("zero", "http://0/"),
    ("unspecified", "http://0.0.0.0/"),
    ("private 10", "http://10.0.0.1/"),
    ("private 172", "http://172.16.5.4/"),
    ("private 192", "http://192.168.1.1/"),
    ("metadata", "http://169.254.169.254/latest/meta-data/"),
    ("metadata hex", "http://0xa9fea9fe/"),
    ("metadata decimal", "http://2852039166/"),
    ("link-local", "http://169.254.1.1/"),
    ("CGNAT", "http://100.64.0.1/"),
    ("alibaba metadata", "http://100.100.100.200/"),
    ("multicast", "http://224.0.0.1/"),
    ("broadcast", "http://255.255.255.255/"),
    ("reserved", "http://240.0.0.1/"),
    # IPv6, and IPv4 hidden in it
    ("v6 loopback", "http://[::1]/"),
    ("v6 unspecified", "http://[::]/"),
    ("mapped dotted", "http://[::ffff:127.0.0.1]/"),
    ("mapped hex", "http://[::ffff:7f00:1]/"),
    ("mapped long form", "http://[0:0:0:0:0:ffff:127.0.0.1]/"),
    ("mapped private", "http://[::ffff:10.0.0.1]/"),
    ("mapped metadata", "http://[::ffff:a9fe:a9fe]/"),
    ("compatible", "http://[::127.0.0.1]/"),
    ("NAT64", "http://[64:ff9b::7f00:1]/"),
    ("NAT64 metadata", "http://[64:ff9b::a9fe:a9fe]/"),
    ("6to4", "http://[2002:7f00:1::]/"),
    ("6to4 metadata", "http://[2002:a9fe:a9fe::]/"),
    ("teredo", "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/"),
    ("link-local zone", "http://[fe80::1%25eth0]/"),
    ("ULA", "http://[fc00::1]/"),
    ("AWS IMDS v6", "http://[fd00:ec2::254]/"),
    ("v6 multicast", "http://[ff02::1]/"),
    # userinfo, backslashes, whitespace, control characters
    ("userinfo to loopback", "http://good.com@127.0.0.1/"),
    ("userinfo with loopback user", "http://127.0.0.1@good.com/"),
    ("backslash userinfo", "http://evil.com\\@good.com/"),
    ("backslash with port", "http://127.0.0.1:80\\@good.com/"),
    ("backslash path", "http://good.com\\..\\x"),
    ("leading space", " http://127.0.0.1/"),
    ("newline", "http://good.com/\nHost: 127.0.0.1"),
    ("tab", "http://127.0.0.1\t/"),
    ("brackets around a name", "http://[example.com]/"),
    ("unbalanced bracket", "http://[::1/"),
    # IDNA and Unicode look-alikes
    ("full-width localhost", "http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/"),
    ("ideographic dots", "http://127\u30020\u30020\u30021/"),
    ("circled digits", "http://\u2460\u2461\u2466.0.0.1/"),
    ("circled letters", "http://\u24db\u24de\u24d2\u24d0\u24db\u24d7\u24de\u24e2\u24e3/"),
    ("trailing dot", "http://localhost./"),
    ("upper case", "http://LOCALHOST/"),
    # schemes and ports
    ("file", "file:///etc/passwd"),
    ("gopher", "gopher://127.0.0.1:70/_x"),
    ("ftp", "ftp://example.com/"),
    ("dict", "dict://example.com:11211/"),
    ("scheme-relative", "//example.com/"),
    ("no scheme", "example.com"),
    ("no host", "http:///path"),
    ("ssh port", "http://example.com:22/"),
    ("port zero", "http://example.com:0/"),
    ("port out of range", "http://example.com:99999/"),
    # names that resolve somewhere they shouldn't
    ("nip.io style", "http://127.0.0.1.nip.io/"),
    ("internal name", "http://internal.corp/"),
    ("one bad answer of two", "http://rebind.test/"),
    ("metadata name", "http://metadata.google.internal/computeMetadata/v1/"),
    ("AAAA loopback", "http://v6only.test/"),
    ("AAAA mapped metadata", "http://mapped.test/"),
    ("AAAA NAT64 private", "http://nat64.test/"),
]

ALLOWLIST_DENIED = [
    ("not allowlisted", "https://api.example.org/"),
    ("allowlisted name as prefix", "https://example.com.evil.net/"),
    ("suffix without dot", "https://evilexample.com/"),
    ("allowlisted host in userinfo", "https://example.com@evil.com/"),
]


def _fetch(agent: guardkit.LocalAgent, calls: Any, **rule: Any) -> Any:
    @guardkit.tool(guard=agent, egress={"url": EgressRule(resolver=stub_resolver, **rule)})
    def fetch(url: Any) -> str:
        calls(url)
        return "fetched"

    return fetch


@pytest.mark.parametrize(("case", "url"), DENIED, ids=[c for c, _ in DENIED])
def test_denied(agent, ledger, calls, case, url):
    fetch = _fetch(agent, calls)
    with pytest.raises(ToolDenied) as info:
        fetch(url)
    assert calls.count == 0, case
    assert info.value.reason["code"] == "egress_denied"
    assert ledger(agent, "action_denied")[-1]["reason"]["code"] == "egress_denied"


def test_unresolvable_host_is_refused_without_a_scar(agent, ledger, calls):
    """A DNS failure is the world failing, not the agent misbehaving: its own code, no scar."""
    fetch = _fetch(agent, calls)
    with pytest.raises(ToolDenied) as info:
        fetch("http://nxdomain.test/")
    assert calls.count == 0
    assert info.value.reason["code"] == "egress_unresolved"
    assert ledger(agent, "action_denied")[-1]["reason"]["code"] == "egress_unresolved"
    assert agent.status()["scar_score"] == 0


@pytest.mark.parametrize(("case", "url"), ALLOWLIST_DENIED, ids=[c for c, _ in ALLOWLIST_DENIED])
def test_denied_by_the_host_allowlist(agent, calls, case, url):
    fetch = _fetch(agent, calls, allow_hosts=["example.com", "*.example.com"])
    with pytest.raises(ToolDenied):
        fetch(url)
    assert calls.count == 0, case


@pytest.mark.parametrize("value", [123, ["http://example.com/"], b"http://example.com/"])
def test_non_strings_are_denied(agent, calls, value):
    with pytest.raises(ToolDenied):
        _fetch(agent, calls)(value)
    assert calls.count == 0


ALLOWED = [
    ("public name", "https://example.com/", {}, ["93.184.216.34"]),
    ("fragment is not the host", "http://good.com#@127.0.0.1/", {}, ["93.184.216.36"]),
    (
        "subdomain allowlisted",
        "https://api.example.com/v1",
        {"allow_hosts": ["*.example.com"]},
        ["93.184.216.35"],
    ),
    (
        "full-width public name",
        "https://\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com/",
        {},
        ["93.184.216.34"],
    ),
    ("upper case with trailing dot", "https://EXAMPLE.COM./", {}, ["93.184.216.34"]),
    ("public IPv4", "http://8.8.8.8/", {}, ["8.8.8.8"]),
    ("public IPv6", "http://[2606:4700:4700::1111]/", {}, ["2606:4700:4700::1111"]),
    ("public AAAA", "https://public6.test/", {}, ["2606:4700:4700::1111"]),
    (
        "private network allowed",
        "http://10.0.0.5:8080/",
        {"allow_networks": ["10.0.0.0/24"], "allow_ports": [8080]},
        ["10.0.0.5"],
    ),
    ("deny_private off", "http://127.0.0.1/", {"deny_private": False}, ["127.0.0.1"]),
]


@pytest.mark.parametrize(
    ("case", "url", "rule", "addresses"), ALLOWED, ids=[c for c, *_ in ALLOWED]
)
def test_allowed_records_the_addresses(agent, ledger, calls, case, url, rule, addresses):
    fetch = _fetch(agent, calls, **rule)
    assert fetch(url) == "fetched"
    assert calls.count == 1
    recorded = ledger(agent, "action_requested")[-1]["input"]["_guardkit"]["egress"]["url"]
    assert recorded["addresses"] == addresses


def test_rules_from_the_policy_section(make_agent, calls):
    agent = make_agent(
        tools={
            "fetch": {
                "cost": 0,
                "egress": {"url": {"allow_hosts": ["8.8.8.8"], "allow_ports": [443]}},
            }
        }
    )

    @guardkit.tool(guard=agent)
    def fetch(url: str) -> str:
        calls(url)
        return "ok"

    assert fetch("https://8.8.8.8/") == "ok"
    for bad in ("https://1.1.1.1/", "http://8.8.8.8/", "https://127.0.0.1/"):
        with pytest.raises(ToolDenied):
            fetch(bad)
    assert calls.count == 1


@pytest.mark.parametrize(
    "section",
    [
        {"url": {"allow_ports": ["443"]}},
        {"url": {"deny_private": "no"}},
        {"url": {"allow_networks": ["not-a-net"]}},
        {"url": {"colour": 1}},
        {"url": []},
    ],
)
def test_malformed_policy_sections_raise_policy_error(make_agent, section):
    agent = make_agent(tools={"fetch": {"cost": 0, "egress": section}})

    @guardkit.tool(guard=agent)
    def fetch(url: str) -> str:
        return url

    with pytest.raises(PolicyError):
        fetch("https://example.com/")


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("127.0.0.1", "loopback"),
        ("169.254.169.254", "cloud metadata"),
        ("100.64.1.1", "CGNAT"),
        ("::ffff:127.0.0.1", "loopback (as IPv4 embedded in ::ffff:127.0.0.1)"),
        ("::ffff:7f00:1", "loopback (as IPv4 embedded in ::ffff:127.0.0.1)"),
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
        ("fe80::1%eth0", "link-local"),
    ],
)
def test_forbidden_category(text, category):
    assert forbidden_category(ipaddress.ip_address(text)) == category


def test_embedded_ipv4_forms():
    found = embedded_ipv4(ipaddress.IPv6Address("2002:7f00:1::"))
    assert ipaddress.IPv4Address("127.0.0.1") in found
    assert parse_literal("0x7f.1") == ipaddress.IPv4Address("127.0.0.1")
    assert parse_literal("deadbeef") is None
    assert parse_literal("example.com") is None


def test_corpus_is_large_enough():
    assert len(DENIED) + len(ALLOWLIST_DENIED) >= 60


# -- host names as the clients connect to them (issue 14) ------------------------------------

IDNA_ZONE = {
    "fass.de": ["93.184.216.50"],
    "xn--fa-hia.de": ["93.184.216.51"],
    "xn--bcher-kva.de": ["93.184.216.52"],
    "xn--mxac.gr": ["93.184.216.53"],
}


def idna_resolver(host: str, port: Any, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
    if host not in IDNA_ZONE:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in IDNA_ZONE[host]]


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        # IDNA 2003 (urllib) says fass.de, IDNA 2008 (httpx, requests) says xn--fa-hia.de.
        ("https://fa\u00df.de/", ["fass.de"]),
        ("https://fa\u00df.de/", ["xn--fa-hia.de"]),
        ("https://FA\u00df.de/", ["fass.de"]),
        # final sigma: transitional processing maps it to a plain sigma
        ("https://\u03b1\u03c2.gr/", ["*.gr"]),
        # a zero-width joiner is dropped by IDNA 2003 and refused by IDNA 2008
        ("https://fa\u200dss.de/", ["fass.de"]),
    ],
)
def test_hosts_whose_conversions_disagree_are_refused(agent, calls, url, allowed):
    fetch = _fetch_idna(agent, calls, allowed)
    with pytest.raises(ToolDenied) as info:
        fetch(url)
    assert calls.count == 0
    assert info.value.reason["code"] == "egress_denied"


def _fetch_idna(agent: guardkit.LocalAgent, calls: Any, allowed: list[str]) -> Any:
    rule = EgressRule(resolver=idna_resolver, allow_hosts=allowed)

    @guardkit.tool(guard=agent, egress={"url": rule})
    def fetch(url: str) -> str:
        calls(url)
        return "fetched"

    return fetch


@pytest.mark.parametrize(
    ("url", "allowed", "host"),
    [
        ("https://b\u00fccher.de/", ["b\u00fccher.de"], "xn--bcher-kva.de"),
        ("https://B\u00dcCHER.de/", ["xn--bcher-kva.de"], "xn--bcher-kva.de"),
        ("https://\uff42\u00fccher.de/", ["B\u00fccher.DE."], "xn--bcher-kva.de"),
    ],
)
def test_idna_2008_names_are_checked_as_connected(agent, ledger, calls, url, allowed, host):
    assert _fetch_idna(agent, calls, allowed)(url) == "fetched"
    recorded = ledger(agent, "action_requested")[-1]["input"]["_guardkit"]["egress"]["url"]
    assert recorded["host"] == host


def test_the_checked_host_is_the_host_httpx_and_requests_connect_to():
    import httpx
    import requests

    from guardkit.checks.hosts import ascii_host

    for name in ["b\u00fccher.de", "\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com", "xn--mxac.gr"]:
        checked = ascii_host(name)
        # Each client either connects to the host checked or refuses the name outright.
        with contextlib.suppress(requests.exceptions.InvalidURL):
            prepared = requests.Request("GET", f"https://{name}/").prepare()
            assert prepared.url == f"https://{checked}/"
        with contextlib.suppress(httpx.InvalidURL):
            assert httpx.URL(f"https://{name}/").raw_host.decode() == checked


def test_bracketed_ipv6_in_allow_hosts_matches(agent, calls):
    rule = EgressRule(resolver=stub_resolver, allow_hosts=["[2606:2800:220:1:248:1893:25c8:1946]"])

    @guardkit.tool(guard=agent, egress={"url": rule})
    def fetch(url: str) -> str:
        calls(url)
        return "fetched"

    assert fetch("https://[2606:2800:220:1:248:1893:25c8:1946]/") == "fetched"
    assert fetch("https://[2606:2800:220:1:248:1893:25C8:1946]/x") == "fetched"
    assert fetch("https://[2606:2800:220:1:0248:1893:25c8:1946]/") == "fetched"
    with pytest.raises(ToolDenied):
        fetch("https://[2606:2800:220:1:248:1893:25c8:1947]/")
    assert calls.count == 3
    assert rule.allow_hosts == ("2606:2800:220:1:248:1893:25c8:1946",)


@pytest.mark.parametrize(
    "entry",
    ["https://example.com/", "example.com:443", "[example.com]", "[::1", "exa mple.com", ""],
)
def test_unusable_allow_hosts_entries_are_refused_at_construction(entry):
    with pytest.raises(ValueError, match="allow_hosts"):
        EgressRule(allow_hosts=[entry])


def test_unusable_allow_hosts_entries_in_a_policy_name_the_field(make_agent):
    agent = make_agent(
        tools={"fetch": {"cost": 0, "egress": {"url": {"allow_hosts": ["https://x.com/"]}}}}
    )

    @guardkit.tool(guard=agent)
    def fetch(url: str) -> str:
        return url

    with pytest.raises(PolicyError) as info:
        fetch("https://x.com/")
    assert "tools.fetch.egress.url.allow_hosts" in str(info.value)


def test_reason_texts_do_not_depend_on_the_interpreter(agent, calls):
    with pytest.raises(ToolDenied) as info:
        _fetch(agent, calls)("http://[::ffff:7f00:1]/")
    # The host as written, then the address as guardkit formats it (3.13's way, everywhere).
    assert info.value.reason["message"] == (
        "'::ffff:7f00:1' resolves to ::ffff:127.0.0.1 is loopback "
        "(as IPv4 embedded in ::ffff:127.0.0.1)"
    )
