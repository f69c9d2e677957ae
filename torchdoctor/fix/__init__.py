"""`torchdoctor fix`: apply a finding's remedy to the examined environment, prove it worked, and
undo it when it did not.

The flow: diagnose (the check pipeline) -> plan (the remedies fix may run, each command parsed;
everything else stays advice) -> preview (pip's or conda's dry run: versions before and after) ->
record (the undo state, beside the environment) -> apply (argv lists, a deadline, output kept) ->
verify (a fresh probe: the treated findings gone, nothing new failing) -> restore when it was not.
"""
