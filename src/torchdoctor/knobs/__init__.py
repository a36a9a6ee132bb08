"""Knobs: optimisations applied at run time to an unmodified script, and the code that makes them
permanent. Importing this package registers every knob in `REGISTRY` (name -> Knob)."""

from __future__ import annotations

from torchdoctor.discovery import import_submodules
from torchdoctor.knobs.base import GENERIC, REGISTRY, CallEdit, IntRange, Knob, ScriptNames, SiteEdit
from torchdoctor.knobs.order import COMPOSITION_ORDER, apply_knobs, composition_order, knob_env

import_submodules(__name__)  # each knob module registers its knobs

__all__ = ["COMPOSITION_ORDER", "GENERIC", "REGISTRY", "CallEdit", "IntRange", "Knob", "ScriptNames", "SiteEdit",
           "apply_knobs",
           "composition_order", "knob_env"]
