"""The replay log keeps bounded bytes, not events (issue 21, row 7)."""

from __future__ import annotations

import json
from typing import Any

from smoke_ui.replay import DEFAULT_REPLAY_BUDGET, EventHub


def ev(type: str, run: str = "run_1", **data: Any) -> dict[str, Any]:
    return {"type": type, "session_id": "ses_1", "run_id": run, "timestamp": 1.0, "data": data}


def replay(hub: EventHub, since: int = 0) -> list[tuple[int, dict[str, Any]]]:
    backlog, sub = hub.subscribe(since)
    hub.unsubscribe(sub)
    return [(seq, json.loads(text)) for seq, text in backlog]


def types(items: list[tuple[int, dict[str, Any]]]) -> list[str]:
    return [e["type"] for _, e in items]


def test_output_chunks_are_coalesced_then_dropped_when_the_tool_completes() -> None:
    hub = EventHub()
    hub.publish(ev("tool.started", tool_call_id="c1", tool_name="run_command", input={}))
    for n in range(1000):
        hub.publish(ev("tool.output", tool_call_id="c1", tool_name="run_command", stream="stdout", text=f"line {n}\n"))
    items = replay(hub)
    assert types(items) == ["tool.started", "tool.output"]
    seq, out = items[1]
    assert seq == hub.last_seq  # the coalesced entry carries the last chunk's number
    assert out["data"]["snapshot"] is True and out["data"]["omitted_chars"] == 0
    assert out["data"]["text"] == "".join(f"line {n}\n" for n in range(1000))
    # a page that saw chunk 500 gets the snapshot (it replaces, never appends)
    assert types(replay(hub, since=500)) == ["tool.output"]
    hub.publish(ev("tool.completed", tool_call_id="c1", tool_name="run_command", is_error=False,
                   content=[{"type": "text", "text": "exit 0"}]))
    assert types(replay(hub)) == ["tool.started", "tool.completed"]


def test_a_snapshot_keeps_the_tail_and_says_how_much_it_dropped() -> None:
    hub = EventHub(snapshot_chars=1000)
    for n in range(100):
        hub.publish(ev("tool.output", tool_call_id="c1", tool_name="t", stream="stdout", text=f"{n:03d}" + "x" * 97))
    (_, out), = replay(hub)
    assert len(out["data"]["text"]) == 1000
    assert out["data"]["text"].startswith("090") and out["data"]["text"].endswith("x")
    assert out["data"]["omitted_chars"] == 9000


def test_streamed_text_is_coalesced_and_dropped_at_text_end_thoughts_stay() -> None:
    hub = EventHub()
    hub.publish(ev("run.started", task="t"))
    for word in ("Let ", "me ", "think."):
        hub.publish(ev("text.thought", text=word))
    for word in ("Hello ", "there."):
        hub.publish(ev("text.delta", text=word))
    mid = replay(hub)
    assert types(mid) == ["run.started", "text.thought", "text.delta"]
    assert mid[1][1]["data"]["text"] == "Let me think."
    assert mid[2][1]["data"]["text"] == "Hello there." and mid[2][1]["data"]["snapshot"] is True
    hub.publish(ev("text.end", text="Hello there."))
    hub.publish(ev("step.ended", step=1))
    hub.publish(ev("text.thought", text="Second thought."))  # a new block, not merged into the first
    assert types(replay(hub)) == ["run.started", "text.thought", "text.end", "step.ended", "text.thought"]


def test_an_interrupted_message_stays_as_last_seen() -> None:
    hub = EventHub()
    hub.publish(ev("text.delta", text="partial"))
    hub.publish(ev("run.interrupted", reason="aborted"))
    hub.publish(ev("text.delta", run="run_2", text="next run"))
    items = replay(hub)
    assert types(items) == ["text.delta", "run.interrupted", "text.delta"]
    assert items[0][1]["data"]["text"] == "partial"


def test_the_budget_is_bytes_and_pending_approvals_are_never_evicted() -> None:
    hub = EventHub(budget_bytes=64 * 1024)
    hub.publish(ev("permission.required", tool_call_id="p1", kind="tool", tool_name="write_file",
                   input={"path": "a", "content": "y" * 20_000}))
    for n in range(500):
        hub.publish(ev("step.ended", step=n, pad="z" * 500))
    assert hub.replay_bytes <= 64 * 1024
    items = replay(hub)
    assert items[0][1]["type"] == "permission.required"  # pinned: kept whole
    assert items[0][1]["data"]["input"]["content"] == "y" * 20_000
    assert items[-1][1]["data"]["step"] == 499
    assert hub.gap_after(0)
    hub.publish(ev("permission.resolved", tool_call_id="p1", decision="deny"))
    for n in range(200):
        hub.publish(ev("step.ended", step=1000 + n, pad="z" * 500))
    assert "permission.required" not in types(replay(hub))  # answered: an ordinary entry again


def test_a_subagent_that_ends_unpins_its_pending_approval_and_ends_its_message() -> None:
    hub = EventHub(budget_bytes=64 * 1024)
    # the subagent's events carry its own run id and the parent's task call id
    hub.publish(ev("text.delta", run="run_child", text="Looking", parent_tool_call_id="t1"))
    hub.publish(ev("permission.required", run="run_child", tool_call_id="t1.w1", kind="tool", tool_name="write_file",
                   input={"path": "a", "content": "y" * 20_000}, parent_tool_call_id="t1"))
    hub.publish(ev("subagent.interrupted", run="run_child", reason="aborted", parent_tool_call_id="t1"))
    hub.publish(ev("text.delta", run="run_child", text=" again", parent_tool_call_id="t1"))  # never after its end
    items = replay(hub)
    assert [e["data"]["text"] for _, e in items if e["type"] == "text.delta"] == ["Looking", " again"]
    for n in range(300):
        hub.publish(ev("step.ended", step=n, pad="z" * 500))
    # the subagent ended without an answer: its request is an ordinary (evictable) entry again
    assert "permission.required" not in types(replay(hub))
    assert hub.replay_bytes <= 64 * 1024


def test_a_huge_event_is_shortened_in_the_log_but_sent_whole_live() -> None:
    hub = EventHub(max_event_bytes=64 * 1024)
    _, sub = hub.subscribe()
    diff = "+" + "d" * 500_000
    hub.publish(ev("tool.completed", tool_call_id="c1", tool_name="write_file", is_error=False,
                   content=[{"type": "text", "text": "Wrote a"}], data={"diff": diff}))
    live = json.loads(sub.get_nowait()[1])
    assert live["data"]["data"]["diff"] == diff
    (_, kept), = replay(hub)
    assert kept["data"]["replay_truncated"] is True
    assert kept["data"]["content"] == [{"type": "text", "text": "Wrote a"}]
    assert "characters not kept for replay" in kept["data"]["data"]["diff"]
    assert hub.replay_bytes < 64 * 1024


def test_a_page_that_falls_behind_is_cut_off_and_catches_up_from_the_log() -> None:
    hub = EventHub(subscriber_bytes=256 * 1024)
    _, slow = hub.subscribe()
    for _ in range(2000):
        hub.publish(ev("tool.output", tool_call_id="c1", tool_name="t", stream="stdout", text="x" * 1000))
    assert slow.cut
    assert slow.get_nowait() is None  # its stream ends; what waited was dropped
    assert slow.pending == 0
    (_, out), = replay(hub, since=10)
    assert out["data"]["snapshot"] is True


def test_a_flood_keeps_the_log_within_budget() -> None:
    hub = EventHub()
    chunk = "y\n" * 2048  # 4 KiB
    for call in range(3):
        hub.publish(ev("tool.started", tool_call_id=f"c{call}", tool_name="run_command", input={"command": "yes"}))
        for _ in range(10_000):
            hub.publish(ev("tool.output", tool_call_id=f"c{call}", tool_name="run_command", stream="stdout",
                           text=chunk))
        assert hub.replay_bytes <= DEFAULT_REPLAY_BUDGET
        hub.publish(ev("tool.completed", tool_call_id=f"c{call}", tool_name="run_command", is_error=False,
                       content=[{"type": "text", "text": "(40 MB of output)"}]))
    assert hub.replay_events == 6
    assert hub.replay_bytes < 16 * 1024
    ids = [seq for seq, _ in replay(hub)]
    assert ids == sorted(ids)
