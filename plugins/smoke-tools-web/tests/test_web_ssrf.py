"""SSRF: every address that is not public is refused before anything is sent,
on the first hop and after redirects, and the connection goes to the address
that was checked (DNS rebinding, with a resolver stub)."""

from __future__ import annotations

import httpx
import pytest
from smoke_tools_web._addresses import literal_address, refusal
from smoke_tools_web._fetch import Fetched, Fetcher, FetchFailed, FetchRefused
from smoke_tools_web._tools import HopRules

LOCAL = ("web_fetch(domain:127.0.0.1)",)


class RecordingTransport(httpx.AsyncHTTPTransport):
    """A real transport that records the address of every request and refuses,
    before any socket is opened, to reach anything but loopback (the tests must
    never send traffic off this machine)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, str | None]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        address = request.url.host
        self.sent.append((address, request.headers.get("host")))
        ip = literal_address(address)
        if ip is None or not ip.is_loopback:
            raise httpx.ConnectError(f"the test transport does not leave this machine ({address})")
        return await super().handle_async_request(request)


class Rules:
    """A HopPolicy from a list of allowed host patterns (the agent's gate in the agent tests)."""

    def __init__(self, private_hosts: tuple[str, ...] = (), follow: bool = True) -> None:
        self.private_hosts = private_hosts
        self.follow = follow

    def may_reach_private(self, url: str, host: str) -> bool:
        return host in self.private_hosts

    def redirect_refusal(self, url: str, host: str) -> str | None:
        return None if self.follow else "no rule"


@pytest.mark.parametrize("url, why", [
    ("http://127.0.0.1:{port}/page.html", "127.0.0.1 is a loopback address"),
    ("http://127.1:{port}/page.html", "127.0.0.1 is a loopback address (127.1 resolves to 127.0.0.1)"),
    ("http://2130706433:{port}/page.html", "127.0.0.1 is a loopback address"),
    ("http://localhost:{port}/page.html", "is a loopback address (localhost resolves to"),
    ("http://[::ffff:127.0.0.1]:{port}/page.html", "a loopback address (127.0.0.1) inside an IPv6 address"),
    ("http://0.0.0.0:{port}/page.html", "0.0.0.0 is the unspecified address"),
])
def test_loopback_in_every_spelling_is_refused_and_nothing_is_sent(web, fetch, url, why):
    out = fetch(url.format(port=web.port))
    assert out.is_error
    assert why in out.text
    assert "Nothing was sent" in out.text and "web_fetch(domain:" in out.text
    assert web.hits == []


def test_ipv6_loopback_is_refused(web6, fetch):
    out = fetch(web6.url("/page.html"))
    assert out.is_error and "::1 is a loopback address" in out.text
    assert web6.hits == []
    allowed = fetch(web6.url("/page.html"), allow=("web_fetch(domain:[::1])",))
    assert "# Widgets" in allowed.text and web6.count("/page.html") == 1


@pytest.mark.parametrize("address, why", [
    ("10.0.0.1", "a private address"),
    ("10.255.1.2", "a private address"),
    ("172.16.5.4", "a private address"),
    ("192.168.1.1", "a private address"),
    ("169.254.169.254", "a cloud metadata address"),
    ("169.254.1.1", "a link-local address"),
    ("100.100.100.200", "a cloud metadata address"),
    ("100.64.0.1", "a shared (carrier-grade NAT) address"),
    ("224.0.0.1", "a multicast address"),
    ("[fd00:ec2::254]", "a cloud metadata address"),
    ("[fe80::1]", "a link-local address"),
    ("[fc00::1]", "a private address"),
    ("[64:ff9b::a00:1]", "a private address (10.0.0.1) inside an IPv6 address"),
    ("[2002:a00:1::]", "a private address (10.0.0.1) inside an IPv6 address"),
    ("240.0.0.1", "a reserved address"),
])
async def test_private_link_local_multicast_and_metadata_addresses_are_refused(address, why):
    transport = RecordingTransport()
    fetcher = Fetcher(Rules(), transport=transport)
    with pytest.raises(FetchRefused) as caught:
        await fetcher.fetch(f"http://{address}/latest/meta-data/")
    assert why in str(caught.value)
    assert transport.sent == []  # refused before any request


def test_the_agent_refuses_the_metadata_address(fetch):
    out = fetch("http://169.254.169.254/latest/meta-data/iam/")
    assert out.is_error
    assert "169.254.169.254 is a cloud metadata address" in out.text


def test_public_addresses_pass_the_check():
    for address in ("8.8.8.8", "93.184.215.14", "2606:4700::1111", "1.1.1.1"):
        assert refusal(literal_address(address)) is None, address


@pytest.mark.parametrize("url", ["file:///etc/passwd", "gopher://127.0.0.1:70/_x", "ftp://example.com/a",
                                 "data:text/plain,hi", "javascript:alert(1)", "dict://127.0.0.1:11211/stat",
                                 "//example.com/no-scheme"])
def test_other_schemes_are_refused(fetch, url):
    out = fetch(url)
    assert out.is_error
    assert "web_fetch fetches only http:// and https:// URLs" in out.text or "has no host" in out.text


def test_a_name_resolving_to_a_private_address_is_refused(web, fetch):
    async def resolver(host: str, port: int) -> list[str]:
        return ["10.1.2.3"] if host == "intranet.test" else ["127.0.0.1"]

    out = fetch("http://intranet.test/wiki", web_resolver=resolver)
    assert out.is_error
    assert "10.1.2.3 is a private address (intranet.test resolves to 10.1.2.3)" in out.text


def test_one_private_answer_among_public_ones_is_enough_to_refuse():
    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.215.14", "127.0.0.1"]

    async def run() -> None:
        transport = RecordingTransport()
        with pytest.raises(FetchRefused, match=r"127\.0\.0\.1 is a loopback address"):
            await Fetcher(Rules(), resolver=resolver, transport=transport).fetch("http://mixed.test/")
        assert transport.sent == []

    import asyncio

    asyncio.run(run())


async def test_dns_rebinding_cannot_move_the_request(web):
    """The name answers a public address at the check and the local server's
    address afterwards. The request goes to the address checked (the only
    lookup), never to the second answer: the local server gets nothing."""
    answers = ["93.184.215.14", "127.0.0.1"]
    lookups: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        lookups.append(host)
        return [answers[min(len(lookups) - 1, 1)]]

    transport = RecordingTransport()
    fetcher = Fetcher(Rules(), resolver=rebinding, transport=transport)
    with pytest.raises(FetchFailed, match=r"could not connect to http://rebind\.test:\d+/page\.html \(93\.184\.215\.14\)"):
        await fetcher.fetch(f"http://rebind.test:{web.port}/page.html")
    assert lookups == ["rebind.test"]  # one lookup: the one that was checked
    assert transport.sent == [("93.184.215.14", f"rebind.test:{web.port}")]  # to the checked address, Host kept
    assert web.hits == []


async def test_a_name_whose_first_answer_is_local_is_refused_before_any_lookup_counts(web):
    """The other order: local first (refused), public later — the refusal stands and nothing is sent."""
    async def rebinding(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    transport = RecordingTransport()
    with pytest.raises(FetchRefused):
        await Fetcher(Rules(), resolver=rebinding, transport=transport).fetch(f"http://rebind.test:{web.port}/")
    assert transport.sent == [] and web.hits == []


async def test_a_rule_naming_the_host_lets_the_connection_go_to_the_checked_local_address(web):
    async def resolver(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    transport = RecordingTransport()
    fetched = await Fetcher(Rules(private_hosts=("docs.internal",)), resolver=resolver,
                            transport=transport).fetch(f"http://docs.internal:{web.port}/notes.txt")
    assert isinstance(fetched, Fetched) and fetched.status == 200
    assert transport.sent == [("127.0.0.1", f"docs.internal:{web.port}")]
    assert web.headers_seen[-1]["host"] == f"docs.internal:{web.port}"


def test_a_redirect_to_the_metadata_address_is_not_followed(web, fetch):
    out = fetch(web.url("/to-metadata"), allow=LOCAL, auto_approve=False)  # the rule allows the first call
    assert not out.is_error  # the model is told where it leads
    assert "redirects (HTTP 302) to http://169.254.169.254/latest/meta-data/, on another host" in out.text
    assert "It was not followed: no permission rule allows 169.254.169.254" in out.text


async def test_a_redirect_to_the_metadata_address_is_refused_even_when_redirects_are_followed(web):
    transport = RecordingTransport()
    fetcher = Fetcher(Rules(private_hosts=("127.0.0.1",), follow=True), transport=transport)
    with pytest.raises(FetchRefused, match=r"169\.254\.169\.254 is a cloud metadata address"):
        await fetcher.fetch(web.url("/to-metadata"))
    assert [address for address, _ in transport.sent] == ["127.0.0.1"]  # the first hop only


def test_with_everything_allowed_a_redirect_to_metadata_is_still_refused(web, fetch):
    out = fetch(web.url("/to-metadata"), allow=(*LOCAL, "web_fetch"), permission="allow-all")
    assert out.is_error
    assert "169.254.169.254 is a cloud metadata address" in out.text


def test_a_redirect_to_another_scheme_is_refused(web, fetch):
    out = fetch(web.url("/to-file"), allow=(*LOCAL, "web_fetch"))
    assert out.is_error
    assert "uses file:" in out.text


def test_a_redirect_to_a_local_name_needs_its_own_rule(make_server, route, fetch):
    target = make_server({"/secret": route(200, b"internal secret", {"Content-Type": "text/plain"})})
    start = make_server({"/go": route(302, b"", {"Location": f"http://localhost:{target.port}/secret"})})
    out = fetch(start.url("/go"), allow=(*LOCAL, "web_fetch"))  # the bare rule follows redirects, names no host
    assert out.is_error
    assert "is a loopback address (localhost resolves to" in out.text
    assert target.hits == []
    allowed = fetch(start.url("/go"), allow=(*LOCAL, "web_fetch(domain:localhost)"))
    assert "internal secret" in allowed.text and target.count("/secret") == 1


def test_wildcard_only_rules_never_unlock_local_addresses(web, fetch):
    for rule in ("web_fetch", "web_fetch(*)", "web_fetch(domain:*)", "web_fetch(*.*)"):
        out = fetch(web.url("/notes.txt"), allow=(rule,))
        assert out.is_error and "is a loopback address" in out.text, rule
    assert web.hits == []


def test_hop_rules_follow_the_gate(workspace):
    """HopRules asks the agent's gate; a deny rule for a redirect target wins."""
    import smoke_tools_web

    from smoke_core import create_agent
    from smoke_core.testing import ScriptedProvider

    agent = create_agent(workspace, provider=ScriptedProvider([]),
                         plugins=[smoke_tools_web], autoload_plugins=False,
                         permissions={"allow": ["web_fetch(*.example.com)"], "deny": ["web_fetch(domain:evil.example.com)"]})
    rules = HopRules(agent.options)
    assert rules.redirect_refusal("https://docs.example.com/", "docs.example.com") is None
    assert "denied by deny rule 'web_fetch(domain:evil.example.com)'" in rules.redirect_refusal(
        "https://evil.example.com/", "evil.example.com")
    assert rules.redirect_refusal("https://other.org/", "other.org").startswith("no permission rule allows other.org")
    assert rules.may_reach_private("https://docs.example.com/", "docs.example.com") is True
    assert rules.may_reach_private("https://other.org/", "other.org") is False
