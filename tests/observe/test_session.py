"""The observed process's session: what it tells the parent while the script runs."""

from __future__ import annotations

from torchdoctor.observe.session import _Progress


def test_progress_sends_each_phase_change_and_its_last_step_but_not_a_line_every_step(tmp_path):
    path = tmp_path / "progress"
    path.write_bytes(b"")
    progress = _Progress(str(path))
    progress.send("warm-up", 1, 5)
    for done in range(2, 5):
        progress.send("warm-up", done, 5)  # within INTERVAL_NS of the first: not sent
    progress.send("timing", 0, 20)
    progress.send("timing", 20, 20)
    progress.close()
    assert path.read_text().splitlines() == ["warm-up 1 5", "timing 0 20", "timing 20 20"]
