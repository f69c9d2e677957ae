"""The ``inspect`` command's wing: read a checkpoint in a child process without unpickling it
(checkpoint.py) and judge the globals it names against torch's weights_only allowlist
(weights_only.py)."""
