"""What torch.compile did in a run, and whether it paid off (see docs/compile.md).

The facts are gathered inside the observed child by `torchdoctor.observe.probes.compile`; this
package reads them as values: log parsing, capability probes, the eager-vs-compiled comparison,
the mode variants and the advice.
"""
