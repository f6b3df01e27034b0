"""Contract tests every tool plugin should pass.

Subclass in your plugin's tests, name the plugin and give one call per tool
that should succeed::

    import acme_tools
    from smoke_core.testing import ToolContract

    class TestAcmeToolsContract(ToolContract):
        plugin = acme_tools
        sample_inputs = {"acme_count_lines": {"path": "notes.txt"}}

        def prepare_workspace(self, root):
            (root / "notes.txt").write_text("one\\ntwo\\n")

The tests build real agents holding only this plugin (no autoloading, the
settings isolated, a :class:`~smoke_core.testing.ScriptedProvider` as the
model) and check what a host and a model rely on: the plugin is accepted by
this core (hooks, plugin API version), it registers tools whose names and
JSON Schemas every provider accepts, each tool runs on its sample through the
whole pipeline (validation, hooks, the permission gate) and returns
well-formed content, and a tool declaring ``read_only_hint`` leaves the
workspace as it found it. A question a tool asks (``ctx.ask_user``) is
answered as a person would (:attr:`ToolContract.answer`, or the first option
offered); a tool that ends the run (``ctx.finish``) may; a run of the samples
that takes over :attr:`ToolContract.run_timeout` seconds fails then, whether
its tools await or block.

Every first-party tool plugin (filesystem, search, terminal, git, agent,
skills) passes it in its own tests.

The class name has no ``Test`` prefix, so pytest collects it only through
subclasses. The tests use pytest's ``tmp_path`` and ``monkeypatch`` fixtures.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

#: what OpenAI, Anthropic and the OpenAI-compatible servers all accept as a tool name
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolContract:
    """Not collected by itself (no ``Test`` prefix); subclasses are."""

    #: the plugin under test: its module (what the entry point names) or object
    plugin: Any = None
    #: tool name -> an input that should succeed; every tool needs one
    sample_inputs: dict[str, dict[str, Any]] = {}
    #: what a person answers when a tool asks (``ctx.ask_user``): the first
    #: option offered, else this text
    answer: str = "yes"
    #: seconds one run of the samples may take before the test fails (a tool
    #: waiting for something that never comes fails instead of hanging; a
    #: synchronous one keeps its thread, which Python cannot stop, until it returns)
    run_timeout: float = 60.0
    #: more keyword arguments for ``create_agent`` (settings the plugin declares,
    #: ``permissions={"allow": [...]}``), e.g. a rule that lets a web tool reach a
    #: local test server
    agent_kwargs: dict[str, Any] = {}

    def prepare_workspace(self, root: Path) -> None:
        """Create the files the samples need in the (empty) workspace ``root``."""

    # ------------------------------------------------------------ helpers

    def _workspace(self, tmp_path: Path, monkeypatch: Any) -> Path:
        from ._scripted import isolate_settings

        isolate_settings(monkeypatch, tmp_path / "settings")
        monkeypatch.setenv("SMOKE_LOAD_PLUGINS", "")  # only the plugin under test, even in a full environment
        root = tmp_path / "workspace"
        root.mkdir()
        self.prepare_workspace(root)
        return root

    def _agent(self, root: Path, turns: list[Any]) -> tuple[Any, Any]:
        from ..run.factory import create_agent
        from ._scripted import ScriptedProvider

        assert self.plugin is not None, f"{type(self).__name__}: set `plugin = <your plugin module>`"
        provider = ScriptedProvider(turns)
        agent = create_agent(root, provider=provider, plugins=[self.plugin], autoload_plugins=False,
                             auto_approve=True, **self.agent_kwargs)
        return agent, provider

    def _tools(self, root: Path) -> dict[str, Any]:
        agent, _ = self._agent(root, [])
        return dict(agent.tools)

    def _run_samples(self, root: Path, names: list[str]) -> dict[str, dict[str, Any]]:
        """Call ``names`` with their samples in one model turn; the tool result each call got.
        A question a tool asks gets :attr:`answer` (or its first option), as a
        person would give it; a tool that ends the run (``ctx.finish``) ends it."""
        import asyncio

        calls: list[dict[str, Any]] = [
            {"id": f"contract_{i}", "name": n, "input": self.sample_inputs[n]} for i, n in enumerate(names)
        ]
        agent, _ = self._agent(root, [{"tool_calls": calls}, "done"])

        def answer(event: Any) -> None:
            options = event.data.get("options") or []
            agent.respond(event.data["tool_call_id"], str(options[0]) if options else self.answer)

        agent.on("ask_user.required", answer)

        async def run() -> Any:
            try:
                return await asyncio.wait_for(agent.run("Call each tool once (ToolContract)."), self.run_timeout)
            except TimeoutError:
                raise AssertionError(
                    f"calling {names} with their samples took over {self.run_timeout:g} s: a tool waits for "
                    "something the test never gives (raise run_timeout if it is only slow)"
                ) from None

        # not asyncio.run: its shutdown waits for the worker threads, so a synchronous
        # tool blocked past run_timeout would hold the test; close() leaves them be
        loop = asyncio.new_event_loop()
        try:
            result = loop.run_until_complete(run())
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
        assert result.status == "completed", f"the run ended {result.status}: {result.error}"
        results: dict[str, dict[str, Any]] = {}
        for message in result.messages:
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    results[block["tool_call_id"]] = block
        missing = [str(c["name"]) for c in calls if str(c["id"]) not in results]
        assert not missing, f"no tool result for {missing} in the run's messages"
        return {str(c["name"]): results[str(c["id"])] for c in calls}

    # ------------------------------------------------------------ the contract

    def test_plugin_is_accepted_by_this_core(self, tmp_path: Path, monkeypatch: Any) -> None:
        """Its hooks exist and take known arguments, and its ``__smoke_plugin_api__``
        (if any) is met by this smoke-core."""
        from ..hooks.manager import api_problem

        assert api_problem(self.plugin) is None, api_problem(self.plugin)
        self._agent(self._workspace(tmp_path, monkeypatch), [])  # raises if the plugin is refused

    def test_registers_tools(self, tmp_path: Path, monkeypatch: Any) -> None:
        tools = self._tools(self._workspace(tmp_path, monkeypatch))
        assert tools, "the plugin registered no tool (register_tools)"

    def test_tool_names_and_descriptions_suit_every_provider(self, tmp_path: Path, monkeypatch: Any) -> None:
        for name, definition in self._tools(self._workspace(tmp_path, monkeypatch)).items():
            assert TOOL_NAME.match(name), f"tool name {name!r}: providers accept 1-64 of A-Z a-z 0-9 _ -"
            assert definition.description.strip(), f"tool {name}: the description is what the model reads; write one"

    def test_input_schemas_are_json_schema_objects(self, tmp_path: Path, monkeypatch: Any) -> None:
        from jsonschema import Draft202012Validator

        for name, definition in self._tools(self._workspace(tmp_path, monkeypatch)).items():
            schema = definition.provider_schema()["input_schema"]
            Draft202012Validator.check_schema(schema)
            assert schema.get("type") == "object", f"tool {name}: providers need an object schema at the top"
            json.dumps(schema)  # sent as JSON: nothing else may hide in it
            missing = set(schema.get("required", [])) - set(schema.get("properties", {}))
            assert not missing, f"tool {name}: required {sorted(missing)} not in properties"

    def test_every_tool_has_a_sample_input_that_fits_its_schema(self, tmp_path: Path, monkeypatch: Any) -> None:
        from jsonschema import Draft202012Validator

        tools = self._tools(self._workspace(tmp_path, monkeypatch))
        missing = sorted(set(tools) - set(self.sample_inputs))
        assert not missing, f"add sample_inputs for {missing}: the contract calls every tool once"
        unknown = sorted(set(self.sample_inputs) - set(tools))
        assert not unknown, f"sample_inputs names tools the plugin does not register: {unknown}"
        for name, sample in self.sample_inputs.items():
            errors = [e.message for e in Draft202012Validator(tools[name].provider_schema()["input_schema"]).iter_errors(sample)]
            assert not errors, f"sample for {name} does not fit its schema: {errors}"

    def test_every_tool_runs_on_its_sample(self, tmp_path: Path, monkeypatch: Any) -> None:
        """Through the whole pipeline; the result is text and image blocks, not an error."""
        root = self._workspace(tmp_path, monkeypatch)
        names = sorted(self._tools(root))
        for name, block in self._run_samples(root, names).items():
            assert block["is_error"] is False, f"tool {name} failed on its sample: {block['content']}"
            assert block["content"], f"tool {name} returned no content"
            for part in block["content"]:
                assert part.get("type") in ("text", "image"), f"tool {name}: unknown content block {part}"
            json.dumps(block)

    def test_read_only_tools_leave_the_workspace_unchanged(self, tmp_path: Path, monkeypatch: Any) -> None:
        """``read_only_hint=True`` means no approval is asked: it must be true."""
        root = self._workspace(tmp_path, monkeypatch)
        names = sorted(n for n, d in self._tools(root).items() if d.annotations.read_only_hint)
        if not names:
            return
        before = _snapshot(root)
        self._run_samples(root, names)
        after = _snapshot(root)
        changed = sorted(set(before.items()) ^ set(after.items()))
        assert not changed, f"read-only tools {names} changed the workspace: {sorted({p for p, _ in changed})}"


def _snapshot(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` (Smoke's own ``.smoke/`` aside) with a digest of its content."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root)
        if rel.parts[:1] == (".smoke",):
            dirs.clear()
            continue
        out[f"{rel}/"] = "dir"
        for f in files:
            path = Path(folder) / f
            out[str(rel / f)] = "link:" + os.readlink(path) if path.is_symlink() else hashlib.sha256(
                path.read_bytes()).hexdigest()
    return out
