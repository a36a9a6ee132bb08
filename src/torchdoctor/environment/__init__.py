"""Where the observed script ran and what it built, typed: a Record's `env` (`Environment`) and
`system` (`SystemSection`) sections as frozen values.

The observed process writes these sections (observe/env.py, observe/facts.py, observe/system.py)
with torch at hand; the diagnosing process reads them without importing torch, so their values
live here, torch-free, below every package that reads them (rules, knobs, compile, check, tune,
report). Read a section with `Environment.from_dict(record.env)`: a field of the wrong type is a
RecordFormatError naming it.
"""

from torchdoctor.environment.machine import Cpu, Devices, Gpu, RankPlacement, TorchSwitches, Versions
from torchdoctor.environment.script import (CompileCall, DataLoaderFacts, EmbeddingTable, ForwardState, GuardedCall,
                                            LayerShape, ModelFacts, OptimizerFacts, RuntimeFacts, SamplerIteration,
                                            ScriptHook, ScriptTools, ScriptWarning)
from torchdoctor.environment.section import Environment
from torchdoctor.environment.system import SystemSection, SystemSummary

__all__ = ["CompileCall", "Cpu", "DataLoaderFacts", "Devices", "EmbeddingTable", "Environment", "ForwardState", "Gpu",
           "GuardedCall", "LayerShape", "ModelFacts", "OptimizerFacts", "RankPlacement", "RuntimeFacts",
           "SamplerIteration", "ScriptHook", "ScriptTools", "ScriptWarning", "SystemSection", "SystemSummary",
           "TorchSwitches", "Versions"]
