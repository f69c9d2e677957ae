"""``torchdoctor dist``: the check across a cluster, one process per rank under torchrun.

``command`` is the click command and ``launch`` reads the launcher's variables. ``worker`` runs a
rank phase by phase — ``rendezvous``, ``describe``, the node checks (``torchdoctor.check.pipeline``,
as ``check`` runs them), ``collectives``, ``measure_bandwidth``, ``report`` — and is the only
module here that imports torch (the others are handed its modules); ``deadline`` and
``side_channel`` keep a stuck or lost rank from hanging the job. ``fleet`` turns every rank's
record into one fleet report (pure, no torch), ``bandwidth`` holds the nccl-tests arithmetic.
"""
