"""The run's device and torch, read from a Record through the capability table (torchdoctor.capability),
and the advice each supports: which precision to advise, and the sentence an API the run's torch
may lack carries. A run's `env` states both; a trace alone states its GPU (`deviceProperties`) and
bounds its torch by its dialect.
"""

from __future__ import annotations

from torchdoctor.capability import API, Precision, TorchVersion, cpu_precision, gpu_precision, requirement, supports
from torchdoctor.environment import Environment
from torchdoctor.finding import Fix
from torchdoctor.rules.base import MissingEvidence
from torchdoctor.rules.evidence import Evidence


def run_precision(ev: Evidence) -> Precision:
    """The row of the run's first GPU (env, else the trace's deviceProperties), of the CPU when the
    models stayed on it (by its recorded ISA flags, `env.cpu.isa_flags`; bf16 not known in a Record
    without them), else an unknown device."""
    environment = _environment(ev)
    gpus = environment.gpus if environment else ()
    if gpus:
        rocm = bool(environment and environment.versions and environment.versions.hip)
        return gpu_precision(gpus[0].compute_capability, gpus[0].name, rocm)
    try:
        properties = ev.trace_facts().device_properties
    except MissingEvidence:
        properties = ()
    if properties:
        return gpu_precision(properties[0].compute_capability, properties[0].name)
    try:
        if ev.runs_on_cpu_only():
            return cpu_precision(run_isa_flags(ev))
    except MissingEvidence:
        pass
    return Precision("an unknown device", known=False)


def run_isa_flags(ev: Evidence) -> frozenset[str] | None:
    """The CPU's precision ISA flags the Record holds (`env.cpu.isa_flags`); None where it holds none."""
    environment = _environment(ev)
    flags = environment.cpu.isa_flags if environment and environment.cpu else None
    return frozenset(flags) if flags is not None else None


def run_torch(ev: Evidence) -> TorchVersion:
    """The torch that recorded the run: exact from `env.versions.torch`, else bounded by the trace's
    dialect, else not known."""
    environment = _environment(ev)
    if environment and environment.versions and environment.versions.torch:
        return TorchVersion.exact(environment.versions.torch)
    try:
        dialect = ev.trace_rank().dialect
    except MissingEvidence:
        return TorchVersion()
    return TorchVersion.of_dialect(dialect.categories, dialect.profiler_step) if dialect else TorchVersion()


def _environment(ev: Evidence) -> Environment | None:
    try:
        return ev.environment() if ev.record.env else None
    except MissingEvidence:
        return None


def gated_fix(ev: Evidence, api: str, fix: Fix, fallback: str) -> Fix:
    """`fix` where the run's torch has `api`; else its text with the requirement said ("torch.compile
    needs torch >= 2.0; this run was recorded with torch 1.9 or earlier") and `fallback`, code that
    runs on that torch, first: alone where the torch is known to lack `api`, followed by `fix`'s code
    marked with the version it needs where the version is not known."""
    torch = run_torch(ev)
    needs = requirement(api, torch)
    if not needs:
        return fix
    if supports(api, torch) is False:
        return Fix(f"{fix.text} ({needs}: upgrade torch to use it.)", fallback)
    return Fix(f"{fix.text} ({needs}.)",
               f"{fallback}\n# with torch >= {API[api][0][0]}.{API[api][0][1]}:\n# " + fix.code.replace("\n", "\n# "))


def precision_fix(ev: Evidence, precision: Precision) -> tuple[Fix, str]:
    """(the precision advice for `precision`'s device, the knob tune tries for it): bf16 or TF32 on a
    device with both; fp16 autocast with a GradScaler on one with fp16 only (sm70/sm75) and,
    conservatively, on a GPU the table does not know."""
    if precision.bf16 and precision.tf32:
        return Fix(f"Allow TF32, or run the forward under bf16 autocast ({precision.describe()}).",
                   "torch.set_float32_matmul_precision('high')\n"
                   "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)"), "tf32"
    if precision.bf16:
        return Fix(f"Run the forward under bf16 autocast ({precision.describe()}).",
                   "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)"), "autocast_bf16"
    unknown = "" if precision.known else " The table does not know this device; fp16 is the safe choice."
    return Fix(f"Run the forward under fp16 autocast with a GradScaler ({precision.describe()}).{unknown}",
               _fp16_code(run_torch(ev))), "autocast_fp16"


def _fp16_code(torch: TorchVersion) -> str:
    """fp16 autocast and scaling in the API the run's torch has: torch.amp from 2.3, torch.cuda.amp
    (1.6 on) before and where the version is not known."""
    amp = "torch.amp" if not requirement("amp_grad_scaler", torch) else "torch.cuda.amp"
    scaler = 'GradScaler("cuda")' if amp == "torch.amp" else "GradScaler()"
    autocast = 'autocast("cuda", dtype=torch.float16)' if amp == "torch.amp" else "autocast(dtype=torch.float16)"
    return (f"scaler = {amp}.{scaler}\nwith {amp}.{autocast}:\n    loss = model(x)\n"
            "scaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()")
