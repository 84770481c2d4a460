"""The first five minutes, through a real terminal: tmux at 80 columns, as a newcomer sees it.

Runs the README's main job, then the follow-up commands it suggests (`sweep results`,
`sweep status`), and reads the screen: the winner's parameters and Sharpe ratio must be
legible (no cell cut to "…") and the table hash must be whole.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from sweep import load_results

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


class Terminal:
    """A detached tmux session of a fixed size; commands typed, the screen read back."""

    def __init__(self, width: int = 80, height: int = 60) -> None:
        # A socket path must be short (108 bytes): a fresh folder directly under the temp dir.
        self.folder = tempfile.mkdtemp(prefix="rs-tmux-")
        self.base = ["tmux", "-S", f"{self.folder}/s", "-f", "/dev/null"]
        self.env = {**os.environ, "COLUMNS": str(width)}
        subprocess.run(
            [*self.base, "new-session", "-d", "-x", str(width), "-y", str(height), "-s", "t"],
            check=True,
            env=self.env,
            cwd=REPO,
        )
        self.count = 0

    def run(self, command: str, timeout: float = 300.0) -> str:
        """Type a command, wait for it to finish, return the screen it left (and clear)."""
        self.count += 1
        marker = f"__done_{self.count}__"
        self._tmux("send-keys", "-t", "t", "clear", "Enter")
        self._tmux("send-keys", "-t", "t", f"{command}; echo {marker}", "Enter")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if re.search(rf"^{marker}\s*$", screen, flags=re.M):
                return screen
            time.sleep(0.5)
        raise AssertionError(f"{command!r} did not finish; screen:\n{self.screen()}")

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-t", "t", "-S", "-200").stdout

    def close(self) -> None:
        self._tmux("kill-server", check=False)
        shutil.rmtree(self.folder, ignore_errors=True)

    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.base, *args], capture_output=True, text=True, env=self.env, check=check
        )


@pytest.fixture
def terminal(tmp_path):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    term = Terminal()
    yield term
    term.close()


def test_quick_start_and_follow_up_commands_are_readable_at_80_columns(terminal, tmp_path):
    sweep = f"{shlex.quote(sys.executable)} -m sweep"
    run_dir = tmp_path / "run"
    screen = terminal.run(f"{sweep} run examples/momentum.toml --run-dir {run_dir}")
    assert "table hash:" in screen and "Traceback" not in screen
    suggested = re.search(r"results:\s+sweep results (\S+) --top 10", screen)
    assert suggested, screen

    screen = terminal.run(f"{sweep} results {run_dir} --top 10")
    assert "…" not in screen, screen
    best = load_results(run_dir).sort_values("excess_sharpe_ann", ascending=False).iloc[0]
    cells = [
        str(best["config_id"])[:8],
        str(int(best["lookback"])),
        f"{best['band']:.4g}",
        f"{best['excess_sharpe_ann']:.2f}",
        f"{best['p_value']:.3f}",
    ]
    first_row = next(line for line in screen.splitlines() if line.lstrip().startswith("1 "))
    assert first_row.split()[1:6] == cells, (first_row, cells)
    table = [line for line in screen.splitlines() if "__done_" not in line]
    assert all(len(line) <= 80 for line in table), table

    screen = terminal.run(f"{sweep} status {run_dir}")
    digest = re.search(r"table hash:\s+([0-9a-f]{64})\s*$", screen, flags=re.M)
    assert digest, screen
    assert "100.0%" in screen and f"sweep report {run_dir}" in screen
