"""OpenAI-compatible Chat Completions providers for Smoke.

Registers one provider per preset (``openai``, ``nvidia``, ``openrouter``,
``groq``, ``together``, ``deepseek``, ``mistral``, ``xai``, ``fireworks``,
``cerebras``, ``gemini``, ``huggingface``, and the local servers ``ollama``,
``vllm``, ``lmstudio``, ``llamacpp``) plus ``openai-compatible`` for any
``base_url``. Importing this module is cheap:
``httpx`` and ``httpx-sse`` are imported on the first model call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smoke_core import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable

    from smoke_core.plugin import Agent

    from ._provider import OpenAIChatProvider

__all__ = [
    "LOCAL_PROGRESS_TIMEOUT", "LOCAL_RESPONSE_TIMEOUT", "PRESETS", "OpenAIChatProvider", "Preset", "close_agent",
    "make_provider", "register_providers",
]

#: seconds without new content before a local server's reply is given up (the CPU may read a
#: long prompt for minutes; llama.cpp's prompt_progress counts as content, other servers send none)
LOCAL_PROGRESS_TIMEOUT = 1800.0
#: the whole reply of a local server
LOCAL_RESPONSE_TIMEOUT = 3600.0


@dataclass(frozen=True, slots=True)
class Preset:
    """A named OpenAI-compatible endpoint: where it lives and which variable holds its key."""

    name: str
    base_url: str | None
    env_var: str | None
    default_model: str | None
    description: str
    key_required: bool = True
    base_url_env: str | None = None
    #: how tool calls travel by default: ``native``, ``inline``, ``constrained`` or ``auto``
    #: (native until the server refuses tools or says the model takes none)
    tool_calls: str = "native"
    #: how the server takes a prompt-cache routing key: ``"body"`` (``prompt_cache_key``),
    #: ``"header:<name>"``, or None (it caches on its own, or not at all)
    cache_routing: str | None = None
    #: what to ask the server about itself before a run: ``"llamacpp"`` (``/props``), ``"ollama"``
    #: (``/api/show``), ``"llamacpp?"`` (try ``/props``, quietly: any server), or None
    server: str | None = None
    #: how ``tool_calls: constrained`` holds the reply: ``"grammar"`` (llama.cpp's GBNF) or ``"response_format"``
    constraint: str = "response_format"

    @property
    def self_hosted(self) -> bool:
        """A server someone runs (no key needed): limits from the server, generous timeouts, a default ``max_tokens``."""
        return not self.key_required

    @property
    def local(self) -> bool:
        return self.base_url is not None and self.base_url.startswith("http://localhost")


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-4o-mini", "OpenAI Chat Completions",
               cache_routing="body"),
        Preset(
            "nvidia", "https://integrate.api.nvidia.com/v1", "NVIDIA_API_KEY", "meta/llama-3.3-70b-instruct",
            "NVIDIA NIM (build.nvidia.com)",
        ),
        Preset("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "openai/gpt-4o-mini", "OpenRouter"),
        Preset("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY", "llama-3.3-70b-versatile", "Groq"),
        Preset(
            "together", "https://api.together.xyz/v1", "TOGETHER_API_KEY",
            "meta-llama/Llama-3.3-70B-Instruct-Turbo", "Together AI",
        ),
        Preset("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", "deepseek-chat", "DeepSeek"),
        Preset("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY", "mistral-large-latest", "Mistral AI",
               cache_routing="body"),
        Preset("xai", "https://api.x.ai/v1", "XAI_API_KEY", "grok-3", "xAI Grok", cache_routing="header:x-grok-conv-id"),
        Preset(
            "fireworks", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY",
            "accounts/fireworks/models/llama-v3p3-70b-instruct", "Fireworks AI",
        ),
        Preset("cerebras", "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY", "llama-3.3-70b", "Cerebras"),
        Preset(
            "gemini", "https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY",
            "gemini-2.0-flash", "Google Gemini (OpenAI-compatible endpoint)",
        ),
        Preset(
            "huggingface", "https://router.huggingface.co/v1", "HF_TOKEN",
            "meta-llama/Llama-3.3-70B-Instruct", "Hugging Face Inference Providers",
        ),
        Preset(
            "ollama", "http://localhost:11434/v1", None, "llama3.2", "Ollama on this machine (no key)",
            key_required=False, base_url_env="OLLAMA_BASE_URL", tool_calls="auto", server="ollama",
        ),
        Preset(
            "vllm", "http://localhost:8000/v1", "VLLM_API_KEY", None,
            "vLLM's OpenAI-compatible server on this machine (key only if started with --api-key)",
            key_required=False, base_url_env="VLLM_BASE_URL", tool_calls="auto",
        ),
        Preset(
            "lmstudio", "http://localhost:1234/v1", None, None, "LM Studio's local server (no key)",
            key_required=False, base_url_env="LMSTUDIO_BASE_URL", tool_calls="auto",
        ),
        Preset(
            "llamacpp", "http://localhost:8080/v1", "LLAMACPP_API_KEY", None,
            "llama.cpp's llama-server on this machine (key only if started with --api-key)",
            key_required=False, base_url_env="LLAMACPP_BASE_URL", tool_calls="auto", server="llamacpp",
            constraint="grammar",
        ),
        Preset(
            "openai-compatible", None, "OPENAI_COMPATIBLE_API_KEY", None,
            "Any OpenAI-compatible server (vLLM, LM Studio, llama.cpp server): pass base_url=",
            key_required=False, base_url_env="OPENAI_COMPATIBLE_BASE_URL", tool_calls="auto", server="llamacpp?",
        ),
    )
}


def make_provider(preset: str | Preset, **kwargs: Any) -> OpenAIChatProvider:
    """Build a provider for ``preset`` (a name from :data:`PRESETS` or a :class:`Preset`).

    ``kwargs``: ``model``, ``api_key`` (string or ``callable(provider, user_id)``),
    ``base_url``, ``user_id``, ``tool_calls`` (``native`` / ``inline`` /
    ``constrained`` / ``auto``, or ``{model glob: mode}``), ``prompt_cache``,
    ``prompt_cache_key``, ``context_window``, ``max_output_tokens`` and the
    transport options (``idle_timeout``, ``connect_timeout``,
    ``request_timeout``, ``response_timeout``, ``progress_timeout``,
    ``max_response_bytes``, ``max_line_bytes``, ``headers``).
    """
    import os

    from ._provider import OpenAIChatProvider

    spec = PRESETS[preset] if isinstance(preset, str) else preset
    base_url = kwargs.pop("base_url", None) or (os.environ.get(spec.base_url_env) if spec.base_url_env else None)
    base_url = base_url or spec.base_url
    if not base_url:
        raise ValueError(
            f"provider {spec.name!r} needs base_url= (the server's OpenAI-compatible root, "
            f"e.g. http://localhost:8000/v1) or {spec.base_url_env} in the environment"
        )
    model = kwargs.pop("model", None) or spec.default_model
    if not model:
        raise ValueError(
            f"provider {spec.name!r} needs model= (the model name the server expects; GET {base_url}/models "
            f"lists the ones it serves)"
        )
    kwargs.setdefault("tool_calls", spec.tool_calls)
    kwargs.setdefault("cache_routing", spec.cache_routing)
    kwargs.setdefault("server", spec.server)
    kwargs.setdefault("constraint", spec.constraint)
    if spec.self_hosted:
        kwargs.setdefault("ask_server_facts", True)
        kwargs.setdefault("progress_timeout", LOCAL_PROGRESS_TIMEOUT)
        kwargs.setdefault("response_timeout", LOCAL_RESPONSE_TIMEOUT)
    return OpenAIChatProvider(
        name=spec.name,
        model=model,
        base_url=base_url,
        env_var=spec.env_var,
        key_required=spec.key_required,
        **kwargs,
    )


def _factory(preset: Preset) -> Callable[..., OpenAIChatProvider]:
    def factory(**kwargs: Any) -> OpenAIChatProvider:
        return make_provider(preset, **kwargs)

    factory.__name__ = f"make_{preset.name.replace('-', '_')}_provider"
    return factory


@hookimpl
def register_providers(register: Callable[..., None]) -> None:
    for preset in PRESETS.values():
        register(
            preset.name,
            _factory(preset),
            env_var=preset.env_var,
            description=preset.description,
            default_model=preset.default_model,
        )


@hookimpl
async def close_agent(agent: Agent) -> None:
    """Close the HTTP client of the agent's provider when it is one of ours."""
    provider = agent.provider
    if type(provider).__module__ == f"{__name__}._provider":
        await provider.aclose()  # type: ignore[attr-defined]


def __getattr__(name: str) -> Any:
    if name == "OpenAIChatProvider":
        from ._provider import OpenAIChatProvider

        return OpenAIChatProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
