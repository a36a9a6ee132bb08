"""What the script was doing at a stack sample, in its own words: a function and a file:line.

A sample's frames are the script's own, innermost first. The anchor is the training loop's frame
(the script's innermost frame when a step ended: it calls the optimizer, the backward), else the
script's outermost frame. What the loop was
running is the frame it called, if that is the script's (`save_checkpoint (train.py:212)`: the
function called and the line running in it), else the loop's own line (`train (train.py:85)`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from torchdoctor.goodput.stream import Frame, Stack


@dataclass(frozen=True, slots=True)
class Cause:
    """A place in the script's code, and the library function running under it."""

    function: str
    file: str
    line: int
    library: str = ""

    @property
    def label(self) -> str:
        name = "the top level" if self.function == "<module>" else self.function
        return f"{name} ({Path(self.file).name}:{self.line})"

    @property
    def place(self) -> tuple[str, str, int]:
        return self.function, self.file, self.line


def cause_of(stack: Stack, loop: tuple[str, str] | None) -> Cause:
    """What the loop (or the top level) was running when `stack` was sampled."""
    frames = stack.frames
    anchor = len(frames) - 1
    if loop is not None:
        for index, frame in enumerate(frames):
            if (frame.file, frame.function) == loop:
                anchor = index
                break
    chosen: Frame = frames[anchor - 1] if anchor > 0 else frames[anchor]
    return Cause(chosen.function, chosen.file, chosen.line, stack.leaf)
