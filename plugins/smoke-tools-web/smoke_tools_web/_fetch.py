"""One web_fetch download: the hops, what each hop may reach, and the caps.

Redirects are followed here, not by httpx, so that every hop is checked the
same way: its scheme, its host against the rules (a redirect to another host
is followed only when a rule allows that host, else the model is told where
it leads), and the addresses its name resolves to. The request then goes to
the address that was checked (the URL's host is replaced by it; ``Host`` and
TLS's server name stay the name), so a second DNS answer never counts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ._addresses import IPAddress, ResolveError, Resolver, literal_address, refusal, system_resolver

if TYPE_CHECKING:
    import httpx

SCHEMES = ("http", "https")
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
USER_AGENT = "Smoke-web_fetch/0.2 (+https://github.com/smoke-harness/smoke)"
ACCEPT = ("text/html,application/xhtml+xml,text/markdown,text/plain;q=0.9,application/pdf;q=0.9,"
          "application/json;q=0.8,*/*;q=0.1")


class FetchRefused(Exception):
    """web_fetch will not send this request (scheme, credentials, a refused address). Nothing was sent."""


class FetchFailed(Exception):
    """The request was tried and did not give a page (unreachable, timeout, redirect loop...)."""


class HopPolicy(Protocol):
    """What the rules say about one hop (the tool answers from the permission gate)."""

    def may_reach_private(self, url: str, host: str) -> bool:
        """True when an allow rule with a pattern names ``host`` (loopback, private... then allowed)."""
        ...

    def redirect_refusal(self, url: str, host: str) -> str | None:
        """None when a redirect to ``url`` (another host) may be followed, else why not."""
        ...


@dataclass(slots=True)
class Limits:
    """The caps of one fetch."""

    #: bytes of body read at most (after decompression); past it the read stops
    max_bytes: int = 5_000_000
    max_redirects: int = 5
    #: seconds the whole fetch (every hop, DNS, the body) may take
    timeout_s: float = 30.0


@dataclass(slots=True)
class Fetched:
    """What came back from the last hop."""

    url: str
    final_url: str
    status: int
    reason: str
    content_type: str
    charset: str | None
    body: bytes
    #: the body went past ``Limits.max_bytes`` and was cut there
    cut: bool = False
    #: the size the server announced (``Content-Length``), if any
    announced: int | None = None
    redirects: list[str] = field(default_factory=list)
    address: str = ""


@dataclass(slots=True)
class RedirectStopped:
    """A redirect to another host that no rule allows: not followed."""

    url: str
    location: str
    status: int
    why: str
    redirects: list[str] = field(default_factory=list)


def check_url(raw: str) -> httpx.URL:
    """The URL parsed, or :class:`FetchRefused` saying what is wrong with it."""
    import httpx

    text = raw.strip()
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise FetchRefused(f"{raw!r} is not a URL ({exc}); give a full http:// or https:// address") from None
    scheme = url.scheme.lower()
    if scheme not in SCHEMES:
        shown = f"{scheme}:" if scheme else "no scheme"
        raise FetchRefused(
            f"web_fetch fetches only http:// and https:// URLs; {text!r} uses {shown}. "
            f"Local files are read with read_file."
        )
    if not url.host:
        raise FetchRefused(f"{text!r} has no host; give a full address such as https://docs.python.org/3/")
    if url.userinfo:
        raise FetchRefused(
            f"{_shown(url)} carries a user name or password; web_fetch sends no credentials. "
            f"Remove them from the URL."
        )
    return url.copy_with(fragment=None)


def _shown(url: httpx.URL) -> str:
    """The URL without credentials, for messages."""
    return str(url.copy_with(userinfo=b"")) if url.userinfo else str(url)


def host_of(url: httpx.URL) -> str:
    """The host as rules see it: lower case, IDNA (punycode), no brackets, no trailing dot."""
    return url.raw_host.decode("ascii").lower().strip("[]").rstrip(".")


class Fetcher:
    """Downloads one URL under :class:`Limits` and a :class:`HopPolicy`.

    ``resolver`` is the name lookup (the system's by default); ``transport``
    an httpx transport (tests record the addresses requests go to)."""

    def __init__(self, policy: HopPolicy, *, limits: Limits | None = None, resolver: Resolver | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.policy = policy
        self.limits = limits or Limits()
        self.resolver = resolver or system_resolver
        self.transport = transport

    async def fetch(self, raw_url: str) -> Fetched | RedirectStopped:
        url = check_url(raw_url)
        try:
            async with asyncio.timeout(self.limits.timeout_s):
                return await self._hops(raw_url, url)
        except TimeoutError:
            raise FetchFailed(
                f"fetching {_shown(url)} took over {self.limits.timeout_s:g} s and was stopped "
                f"(web_fetch_timeout_s); the server may be slow or unreachable, try again later"
            ) from None

    async def _hops(self, raw_url: str, url: httpx.URL) -> Fetched | RedirectStopped:
        import httpx

        timeout = httpx.Timeout(self.limits.timeout_s, connect=min(10.0, self.limits.timeout_s))
        seen: list[str] = []
        last_status = 0
        async with httpx.AsyncClient(trust_env=False, follow_redirects=False, timeout=timeout,
                                     transport=self.transport) as client:
            first_host = host_of(url)
            for _hop in range(self.limits.max_redirects + 1):
                text = str(url)
                if text in seen:
                    chain = " → ".join([*seen[seen.index(text):], text])
                    raise FetchFailed(f"redirect loop: {chain}; the page cannot be fetched")
                if seen:
                    url = check_url(text)  # a Location may name another scheme
                    host = host_of(url)
                    if host != first_host:
                        why = self.policy.redirect_refusal(text, host)
                        if why is not None:
                            return RedirectStopped(raw_url, text, last_status, why, seen[1:])
                seen.append(text)
                addresses = await self._addresses(url)
                response = await self._send(client, url, addresses)
                location = response.headers.get("location")
                if response.status_code in REDIRECT_STATUSES and location:
                    await response.aclose()
                    last_status = response.status_code
                    try:
                        url = url.join(location).copy_with(fragment=None)
                    except (httpx.InvalidURL, ValueError) as exc:
                        raise FetchFailed(f"{text} redirected to an address that is not a URL ({location!r}: {exc})") from None
                    continue
                return await self._read(raw_url, url, response, seen[1:])
        raise FetchFailed(
            f"{raw_url} redirected more than {self.limits.max_redirects} times ({' → '.join(seen)}); "
            f"fetch the last address directly if it is the page you want"
        )

    async def _addresses(self, url: httpx.URL) -> list[IPAddress]:
        host = host_of(url)
        port = url.port or (443 if url.scheme == "https" else 80)
        literal = literal_address(host)
        if literal is not None:
            addresses: list[IPAddress] = [literal]
        else:
            try:
                answers: Sequence[str] = await self.resolver(host, port)
            except ResolveError as exc:
                raise FetchFailed(f"could not resolve host {host!r} ({exc}); check the address") from None
            addresses = []
            for answer in answers:
                ip = literal_address(str(answer))
                if ip is None:
                    raise FetchFailed(f"the resolver answered {answer!r} for {host!r}, which is not an address")
                addresses.append(ip)
            if not addresses:
                raise FetchFailed(f"could not resolve host {host!r} (no address); check the address")
        refused = [(ip, why) for ip in addresses if (why := refusal(ip)) is not None]
        if refused and not self.policy.may_reach_private(str(url), host):
            ip, why = refused[0]
            named = "" if literal is not None else f" ({host} resolves to {ip})"
            raise FetchRefused(
                f"web_fetch refused {url}: {ip} is {why}{named}. web_fetch reaches only public addresses; "
                f"a person who wants this host reachable adds the rule web_fetch(domain:{host}) to "
                f"permissions.allow. Nothing was sent."
            )
        return addresses

    async def _send(self, client: httpx.AsyncClient, url: httpx.URL, addresses: list[IPAddress]) -> httpx.Response:
        import httpx

        headers = {"Host": url.netloc.decode("ascii"), "User-Agent": USER_AGENT, "Accept": ACCEPT,
                   "Accept-Encoding": "gzip, deflate"}
        extensions: dict[str, Any] = {"sni_hostname": host_of(url)} if url.scheme == "https" else {}
        last: Exception | None = None
        for ip in addresses:  # every one was checked; the connection goes to the one checked
            request = client.build_request("GET", url.copy_with(host=str(ip)), headers=headers, extensions=extensions)
            try:
                return await client.send(request, stream=True)
            except httpx.ConnectError as exc:
                last = exc
                continue
            except httpx.TimeoutException:
                raise FetchFailed(f"{url} did not answer within {self.limits.timeout_s:g} s (web_fetch_timeout_s)") from None
            except httpx.HTTPError as exc:
                raise FetchFailed(f"{url} failed: {type(exc).__name__}: {exc}") from None
        where = ", ".join(str(ip) for ip in addresses)
        raise FetchFailed(f"could not connect to {url} ({where}): {last or 'no address'}; the host may be down or the "
                          f"address wrong")

    async def _read(self, raw_url: str, url: httpx.URL, response: httpx.Response, redirects: list[str]) -> Fetched:
        import httpx

        cap = self.limits.max_bytes
        announced: int | None = None
        length = response.headers.get("content-length")
        if length and length.strip().isdigit():
            announced = int(length)
        chunks: list[bytes] = []
        size = 0
        cut = False
        started = time.monotonic()
        try:
            async for chunk in response.aiter_bytes():
                room = cap - size
                if len(chunk) > room:
                    chunks.append(chunk[:room])
                    size = cap
                    cut = True
                    break
                chunks.append(chunk)
                size += len(chunk)
        except httpx.TimeoutException:
            raise FetchFailed(f"{url} stopped sending after {time.monotonic() - started:.0f} s") from None
        except httpx.HTTPError as exc:
            raise FetchFailed(f"reading {url} failed: {type(exc).__name__}: {exc}") from None
        finally:
            await response.aclose()
        content_type, _, params = response.headers.get("content-type", "").partition(";")
        charset = None
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.lower() == "charset" and value:
                charset = value.strip().strip("\"'")
        return Fetched(
            url=raw_url, final_url=str(url), status=response.status_code, reason=response.reason_phrase,
            content_type=content_type.strip().lower(), charset=charset, body=b"".join(chunks), cut=cut,
            announced=announced, redirects=redirects, address=str(response.request.url.host),
        )
