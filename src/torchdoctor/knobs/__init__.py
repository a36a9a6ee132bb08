"""Knobs: optimisations applied at run time to an unmodified script, and the code that makes them
permanent. Importing this package registers every knob in `REGISTRY` (name -> Knob)."""

from __future__ import annotations

from torchdoctor.discovery import import_submodules
from torchdoctor.knobs.base import GENERIC, REGISTRY, CallEdit, IntRange, Knob, ScriptNames, SiteEdit
from torchdoctor.knobs.order import COMPOSITION_ORDER, apply_knobs, composition_order, knob_env

#: Modules that write the kept knobs into the user's source (with libcst) and register no knob:
#: imported by who needs them (tune's result), not here. Every observed run and every `run --apply`
#: imports this package into the user's process, where libcst cost ~0.25 s of start-up and 15,000
#: objects the script's garbage collections then walked (10% more than torch's own).
SOURCE_EDITING = ("diff", "names")

import_submodules(__name__, skip=SOURCE_EDITING)  # each knob module registers its knobs

__all__ = ["COMPOSITION_ORDER", "GENERIC", "REGISTRY", "CallEdit", "IntRange", "Knob", "ScriptNames", "SiteEdit",
           "apply_knobs",
           "composition_order", "knob_env"]
