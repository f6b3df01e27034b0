"""Which addresses web_fetch may connect to, and how names become addresses.

Only public (globally routable, unicast) addresses are reached unless a
permission rule names the host. The address is decided once per hop, after
DNS, and the connection goes to exactly that address (so a name that answers
differently the second time — DNS rebinding — cannot move the request).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: ``resolver(host, port) -> [address, ...]``: the lookup web_fetch uses (the
#: ``web_resolver`` setting replaces it; tests pass a stub).
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

#: Cloud instance-metadata endpoints, named so the refusal says what they are
#: (each is also link-local, shared or private and so refused anyway).
METADATA_ADDRESSES = frozenset({
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
    ipaddress.ip_address("169.254.170.2"),  # AWS ECS task metadata
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
})
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_SHARED = ipaddress.ip_network("100.64.0.0/10")


class ResolveError(Exception):
    """The host name has no address (the message says why)."""


def embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, Teredo, NAT64), if any."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if any(ip in net for net in _NAT64):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def refusal(ip: IPAddress) -> str | None:
    """Why web_fetch must not connect to ``ip`` (``"a loopback address"``...), or None when it is public."""
    inner = embedded_ipv4(ip)
    if inner is not None:
        why = refusal(inner)
        return f"{why} ({inner}) inside an IPv6 address" if why else None
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_unspecified:
        return "the unspecified address"
    if isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED:
        return "a shared (carrier-grade NAT) address"
    if ip.is_reserved:
        return "a reserved address"
    if ip.is_private:
        return "a private address"
    if not ip.is_global:
        return "a reserved address"
    return None


def literal_address(host: str) -> IPAddress | None:
    """``host`` as an IP address when it is one (``[::1]`` or ``127.0.0.1``), else None."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


async def system_resolver(host: str, port: int) -> list[str]:
    """The system's lookup (``getaddrinfo``), every address it gives, in its order."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ResolveError(exc.strerror or str(exc)) from None
    out: list[str] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = str(sockaddr[0]).split("%", 1)[0]  # drop an IPv6 zone index
        if address not in out:
            out.append(address)
    return out
