"""The precisions a device runs fast: Tensor Cores (NVIDIA, by compute capability), Matrix Cores
(AMD, by gfx architecture) and a CPU's bf16 instructions (by ISA flags).

Sources: NVIDIA's CUDA C++ Programming Guide (compute capabilities: Volta sm70 and Turing sm75
Tensor Cores take fp16, Ampere sm80/86/87 add bf16 and TF32, Ada sm89 and Hopper sm90 add FP8,
Blackwell sm100/sm120 keep them); PyTorch "CUDA semantics", "TensorFloat-32 (TF32) on Ampere (and
later) devices"; AMD CDNA ISA guides (MI100 gfx908: fp16/bf16 matrix cores; MI200 gfx90a: the
same; MI300 gfx942: + FP8 and xf32); PyTorch's CPU AMP docs (bf16 autocast on CPU pays where the
ISA has AVX512-BF16 or AMX-BF16, Cooper Lake / Sapphire Rapids and later).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Precision:
    """What a device runs on its matrix units: True (it does), False (it does not), None (not known).

    `device` names the architecture as the advice writes it ("sm70", "gfx90a", "cpu"), `known`
    says whether the table knew it at all."""

    device: str
    known: bool
    fp16: bool | None = None
    bf16: bool | None = None
    tf32: bool | None = None
    fp8: bool | None = None

    def describe(self) -> str:
        """"sm70 runs fp16 on its matrix units" / "gfx942 runs fp16, bf16, fp8 on its matrix units" /
        "the precisions of an unknown GPU are not known", for the advice's text: it names only what
        the device is known to run."""
        if not self.known:
            return f"the precisions of {self.device} are not known"
        fast = [name for name in ("fp16", "bf16", "tf32", "fp8") if getattr(self, name)]
        return f"{self.device} runs {', '.join(fast)} on its matrix units" if fast else \
            f"{self.device} has no reduced-precision matrix units"


#: NVIDIA compute capability (major, minor) -> (fp16, bf16, tf32, fp8) on Tensor Cores.
_NVIDIA: dict[tuple[int, int], tuple[bool, bool, bool, bool]] = {
    (7, 0): (True, False, False, False),   # Volta V100
    (7, 2): (True, False, False, False),   # Xavier
    (7, 5): (True, False, False, False),   # Turing T4, RTX 20
    (8, 0): (True, True, True, False),     # A100
    (8, 6): (True, True, True, False),     # A10, RTX 30
    (8, 7): (True, True, True, False),     # Orin
    (8, 9): (True, True, True, True),      # L4, L40, RTX 40 (FP8)
    (9, 0): (True, True, True, True),      # H100, H200
    (10, 0): (True, True, True, True),     # B200
    (12, 0): (True, True, True, True),     # RTX 50
}
#: AMD gfx architecture -> (fp16, bf16, tf32, fp8) on Matrix Cores; TF32 on MI300 (xf32) is not
#: what torch's allow_tf32 switches on for every ROCm release, so it stays "not known".
_AMD: dict[str, tuple[bool, bool, bool | None, bool]] = {
    "gfx908": (True, True, False, False),  # MI100
    "gfx90a": (True, True, False, False),  # MI200 (MI210, MI250)
    "gfx942": (True, True, None, True),    # MI300
}
#: Product names that identify the gfx architecture where the capability alone does not (9.0 is
#: gfx906, gfx908 and gfx90a alike).
_AMD_NAMES = (("MI3", "gfx942"), ("MI25", "gfx90a"), ("MI21", "gfx90a"), ("MI100", "gfx908"))
_AMD_BY_CAPABILITY = {(9, 4): "gfx942"}


def gpu_precision(capability: tuple[int, int] | None, name: str | None = None, rocm: bool = False) -> Precision:
    """The row for a GPU of `capability` (major, minor) named `name`; `rocm`: an AMD GPU (also
    inferred from a name with "AMD"/"Instinct"/"Radeon"). Unknown: every precision None."""
    if rocm or re.search(r"\b(AMD|Instinct|Radeon)\b", name or ""):
        return _amd(capability, name or "")
    if capability is None:
        return Precision("an unknown GPU", known=False)
    row = _NVIDIA.get(capability)
    label = f"sm{capability[0]}{capability[1]}"
    if row is None and capability[0] < 7:
        return Precision(label, True, False, False, False, False)  # before Volta: no Tensor Cores
    if row is None:
        return Precision(label, known=False)
    return Precision(label, True, *row)


def _amd(capability: tuple[int, int] | None, name: str) -> Precision:
    arch = next((gfx for part, gfx in _AMD_NAMES if part in name), None) or _AMD_BY_CAPABILITY.get(capability or (0, 0))
    if arch is None:
        return Precision("an AMD GPU of unknown architecture", known=False)
    return Precision(arch, True, *_AMD[arch])


#: ISA flags (as /proc/cpuinfo writes them) with bf16 matrix or dot-product instructions.
BF16_ISA = frozenset({"avx512_bf16", "amx_bf16"})
#: The flags a Record keeps (`env.cpu.isa_flags`): those that say which precisions the CPU's vector
#: and matrix units compute natively. x86: AVX2/FMA (fp32), F16C (fp16 conversion only), AVX-512,
#: AVX512-BF16/AMX-BF16 (bf16), AVX512-FP16/AMX-FP16 (fp16 arithmetic), VNNI/AMX-INT8 (int8). Arm:
#: asimd (NEON), asimdhp/fphp (fp16 arithmetic), bf16, i8mm, sve/sve2.
PRECISION_ISA = frozenset({"avx2", "fma", "f16c", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni",
                           "amx_tile", "amx_bf16", "amx_fp16", "amx_int8", "asimd", "asimdhp", "fphp", "bf16",
                           "i8mm", "sve", "sve2"})


def cpu_precision(isa_flags: frozenset[str] | None) -> Precision:
    """The CPU's row: bf16 where its ISA flags name AVX512-BF16 or AMX-BF16; None flags (not
    recorded): bf16 not known. fp16/TF32/FP8 are not advised on a CPU."""
    if isa_flags is None:
        return Precision("cpu", False, fp16=False, tf32=False, fp8=False)
    return Precision("cpu", True, False, bool(isa_flags & BF16_ISA), False, False)


def host_isa_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    """This machine's CPU flags from `cpuinfo` (Linux); None where the file is absent or unreadable.
    Read by hand: torch reports only its dispatch level (`get_cpu_capability`: "AVX512"), which
    does not say whether the bf16 instructions are there."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return None
    match = re.search(r"^(flags|Features)\s*:(.*)$", text, re.MULTILINE)
    return frozenset(match.group(2).split()) if match else None


def precision_isa_flags(flags: frozenset[str] | None) -> tuple[str, ...] | None:
    """The PRECISION_ISA flags among `flags`, sorted (what a Record keeps of them); None stays None."""
    return None if flags is None else tuple(sorted(flags & PRECISION_ISA))
