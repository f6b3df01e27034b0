"""Re-take ``docs/images/smoke-serve-demo.png`` from a real ``smoke serve --demo``.

Starts the command as a user would, opens the printed URL in Debian's
Chromium (Playwright, headless; never ``playwright install``), sends the demo
task, clicks *Allow* on each approval and saves a screenshot of the finished
run. Run from the repository root::

    python plugins/smoke-ui/scripts/screenshot_demo.py [OUTPUT.png]
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
OUTPUT = ROOT / "docs" / "images" / "smoke-serve-demo.png"
CHROMIUM = os.environ.get("SMOKE_CHROMIUM", "/usr/bin/chromium")
PLUGINS = "smoke-ui,smoke-tools-filesystem,smoke-tools-search,smoke-tools-terminal,smoke-tools-agent"
WAIT_MS = 60_000


def main() -> int:
    from playwright.sync_api import sync_playwright

    from smoke_core.demo import DEMO_TASK

    output = Path(sys.argv[1]) if len(sys.argv) > 1 else OUTPUT
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "SMOKE_LOAD_PLUGINS": PLUGINS, "XDG_CONFIG_HOME": home, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-c", "from smoke_core.cli import main; main()", "serve", "--demo", "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=home,
        )
        try:
            assert proc.stdout is not None
            url = None
            for line in proc.stdout:
                match = re.search(r"(http://\S+/\?token=\S+)", line)
                if match:
                    url = match.group(1)
                    break
            if url is None:
                print(proc.communicate(timeout=30)[1], file=sys.stderr)
                return 1
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
                page = browser.new_page(viewport={"width": 1280, "height": 1500})
                page.goto(url)
                page.wait_for_selector('[data-testid="connection"].ok', timeout=WAIT_MS)
                page.fill('[data-testid="task-input"]', DEMO_TASK)
                page.press('[data-testid="task-input"]', "Enter")
                pending = '[data-testid="approval-card"]:not(.resolved)'
                done = '[data-testid="final-message"], [data-testid="error-card"]'
                while True:
                    page.wait_for_selector(f"{pending}, {done}", timeout=WAIT_MS)
                    if page.locator(done).count():
                        break
                    page.locator(pending).first.locator('[data-testid="approve-button"]').click()
                    page.wait_for_selector(f"{pending}", state="detached", timeout=WAIT_MS)
                if page.locator('[data-testid="error-card"]').count():
                    print("the demo run failed:", page.inner_text('[data-testid="log"]'), file=sys.stderr)
                    return 1
                page.wait_for_selector('[data-testid="session-item"]', timeout=WAIT_MS)
                page.mouse.move(0, 0)
                output.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(output))
                browser.close()
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
