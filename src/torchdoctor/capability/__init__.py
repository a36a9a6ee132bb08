"""What the device and the torch version can do, in one table, torch-free: which precisions run on
Tensor Cores (or their ROCm and CPU equivalents) by compute capability, gfx architecture or CPU
ISA (`device.py`), and the torch version each API that advice names needs (`torch_api.py`).

Every rule and knob that advises a precision, compiling or an API reads it, so that advice never
names a feature the run's device or torch lacks; where the table does not know the device or the
version, it says "unknown" (None) and the advice takes the conservative option.
"""

from torchdoctor.capability.device import (BF16_ISA, Precision, cpu_precision, gpu_precision, host_isa_flags,
                                           precision_isa_flags)
from torchdoctor.capability.torch_api import API, TorchVersion, parse_version, requirement, supports

__all__ = ["API", "BF16_ISA", "Precision", "TorchVersion", "cpu_precision", "gpu_precision", "host_isa_flags",
           "parse_version", "precision_isa_flags", "requirement", "supports"]
