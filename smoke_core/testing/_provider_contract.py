"""Contract tests for provider adapters, and the HTTP test server they use.

A provider plugin subclasses :class:`ProviderContract` in its tests::

    from smoke_core.testing import ProviderContract, Reply

    class TestMyProviderContract(ProviderContract):
        env_var = "MY_API_KEY"

        def make_provider(self, base_url, api_key, **kwargs):
            return MyProvider(model="m", base_url=base_url, api_key=api_key, **kwargs)

        def text_stream(self, chunks, *, finish="stop", input_tokens=0, output_tokens=0): ...
        def tool_call_stream(self, calls, *, input_tokens=0, output_tokens=0): ...
        def error_body(self, message): ...
        def in_band_error_stream(self, kind, *, text_before=""): ...

The contract's tests talk to the provider over real HTTP on 127.0.0.1
(:class:`FakeProviderServer`), one at the provider level and one through
real agent runs with a fast :class:`~smoke_core.providers.RetryPolicy`:
text streaming, tool-call assembly, usage, finish reasons, 401, 429 with
``Retry-After`` (seconds and HTTP date), 503, 529, a connection dropped
mid-stream, a stall (idle timeout), garbage bytes, in-band error events,
abort closing the stream, and that no tool call ever runs twice.

The class name has no ``Test`` prefix, so pytest collects it only through
subclasses. This module needs no pytest import; tests use ``tmp_path``.
"""

from __future__ import annotations

from ._cassettes import Cassette, Interaction, load_cassette
from ._contract_agent import AgentCases
from ._contract_base import collect_events, upto
from ._contract_limits import LimitCases
from ._contract_wire import WireCases
from ._fake_server import FakeProviderServer, RecordedRequest, Reply

__all__ = [
    "Cassette",
    "FakeProviderServer",
    "Interaction",
    "ProviderContract",
    "RecordedRequest",
    "Reply",
    "collect_events",
    "load_cassette",
    "upto",
]


class ProviderContract(WireCases, LimitCases, AgentCases):
    """Base class for provider adapter tests (subclass it as ``TestXxx``).

    Subclasses set :attr:`env_var` and implement the builders of
    :class:`~smoke_core.testing._contract_base.ContractBase`. The builders
    return :class:`Reply` objects in the adapter's wire format.
    """
