"""What a process torchdoctor starts does for itself, and the names it shares with its parent:
die with torchdoctor (lifeline), run the script as `python SCRIPT` does (scriptrun), end what it
started once torchdoctor is gone (marks), name a signal (signals), call prctl (prctl). Standard library and psutil only:
the observed child (torchdoctor.observe), `run --apply`'s child and torchrun's launcher import it
without the parent side (torchdoctor.launch)."""
