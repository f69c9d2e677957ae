"""``torchdoctor dist``: the check across a cluster, one process per rank under torchrun.

``launch`` reads the launcher's variables, ``worker`` is the torch.distributed process (the only
module here that imports torch), ``fleet`` turns every rank's record into one fleet report
(pure, no torch), ``bandwidth`` holds the nccl-tests arithmetic, ``command`` is the click command.
"""
